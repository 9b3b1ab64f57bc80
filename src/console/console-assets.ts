import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/*
 * What the console's pages load, all served by the service itself (the console's CSP allows scripts and
 * styles from this origin only, none inline): its stylesheet, the script that draws the overview's chart, and
 * Chart.js's own build from node_modules. Kept here as text so that the build carries them into dist/.
 */

const css = String.raw`
:root { --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --bg: #fff; --soft: #f6f8fa; --accent: #0a58ca; --ok: #116329; --bad: #a40e26; --warn: #7d4e00; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible, summary:focus-visible, main:focus-visible { outline: 3px solid #ffbf47; outline-offset: 2px; }
.skip { position: absolute; left: -999px; top: 0; background: var(--fg); color: #fff; padding: .5rem 1rem; z-index: 10; }
.skip:focus { left: .5rem; }
.top { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.5rem; padding: .75rem 1.5rem; border-bottom: 1px solid var(--line); background: var(--soft); }
.brand { font-weight: 700; color: var(--fg); text-decoration: none; }
.top nav ul { display: flex; flex-wrap: wrap; gap: .25rem 1rem; list-style: none; margin: 0; padding: 0; }
.top nav a { text-decoration: none; padding: .25rem 0; }
.top nav a[aria-current="page"] { font-weight: 700; border-bottom: 2px solid var(--accent); }
.sign-out { margin-left: auto; display: flex; align-items: center; gap: .5rem; }
.who { color: var(--muted); font-size: .875rem; overflow-wrap: break-word; }
main { padding: 1rem 1.5rem 3rem; max-width: 80rem; }
h1 { font-size: 1.6rem; margin: .5rem 0 1rem; overflow-wrap: break-word; }
h2 { font-size: 1.25rem; margin: 2rem 0 .75rem; }
h3 { font-size: 1.05rem; margin: 1.25rem 0 .5rem; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; font-size: .9rem; }
th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: break-word; }
th { background: var(--soft); }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.table-wrap { overflow-x: auto; }
.cards { display: flex; flex-wrap: wrap; gap: .75rem; margin: .5rem 0 1rem; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: .75rem 1rem; min-width: 9rem; background: var(--soft); }
.figure { display: block; font-size: 1.5rem; font-weight: 700; }
.badge { display: inline-block; padding: 0 .45rem; border-radius: 999px; font-size: .8rem; border: 1px solid currentColor; }
.badge-processed, .badge-active, .badge-delivered, .badge-trialing, .badge-ok { color: var(--ok); }
.badge-failed, .badge-unpaid, .badge-canceled, .badge-incomplete_expired { color: var(--bad); }
.badge-unmatched, .badge-pending, .badge-past_due, .badge-running { color: var(--warn); }
.badge-override { color: var(--accent); }
.nowrap { white-space: nowrap; }
code.id { font-size: .8rem; color: var(--muted); user-select: all; }
ul.changes { list-style: none; margin: 0; padding: 0; }
ul.changes .field { color: var(--muted); }
ul.changes .was { text-decoration: line-through; text-decoration-color: var(--muted); }
ol.timeline { margin: .5rem 0 1rem; padding-left: 1.5rem; }
ol.timeline li { margin: .35rem 0; }
ol.timeline .when { font-weight: 600; }
.flash { padding: .75rem 1rem; border-radius: 6px; border: 1px solid; margin: 0 0 1rem; }
.flash-done { color: var(--ok); background: #eafbea; }
.flash-refused { color: var(--bad); background: #fff0f0; }
form.inline { display: inline; }
.filters { display: flex; flex-wrap: wrap; gap: .75rem; align-items: flex-end; margin: 0 0 1rem; }
.filters label { display: flex; flex-direction: column; font-size: .875rem; gap: .2rem; }
.filters fieldset { border: 0; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: .25rem 1rem; }
.filters fieldset legend { font-size: .875rem; padding: 0; margin-bottom: .2rem; }
.filters fieldset label { flex-direction: row; align-items: center; gap: .35rem; }
input, select, textarea { font: inherit; padding: .35rem .5rem; border: 1px solid #8c959f; border-radius: 4px; max-width: 100%; }
input[type="search"] { min-width: min(24rem, 100%); }
button { font: inherit; padding: .35rem .9rem; border: 1px solid #8c959f; border-radius: 4px; background: #fff; cursor: pointer; }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
a.button { display: inline-block; padding: .35rem .9rem; border: 1px solid var(--accent); border-radius: 4px; text-decoration: none; }
a.button.primary { background: var(--accent); color: #fff; }
pre { background: var(--soft); border: 1px solid var(--line); padding: .75rem; overflow-x: auto; font-size: .85rem; white-space: pre-wrap; overflow-wrap: break-word; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; margin: .5rem 0 1rem; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: break-word; }
.bar { display: block; width: 100%; max-width: 24rem; height: .75rem; }
/* Chart.js sizes its canvas to its container (responsive, maintainAspectRatio off): the container must have a
   height of its own, or each resize makes the canvas, and with it the container, taller without end. */
.chart { margin: 1rem 0; max-width: 60rem; }
.chart-box { position: relative; height: 16rem; width: 100%; }
.pager { display: flex; gap: 1rem; margin: 1rem 0; }
code { overflow-wrap: break-word; }
.muted { color: var(--muted); }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
ul.pager { list-style: none; padding: 0; }
@media (max-width: 40rem) {
  .top { padding: .5rem .75rem; }
  main { padding: .75rem .75rem 2rem; }
  .sign-out { margin-left: 0; }
  dl.facts { grid-template-columns: 1fr; }
  dl.facts dd { margin-bottom: .4rem; }
  th, td { padding: .35rem .3rem; }
  .chart-box { height: 14rem; }
  /* Tables become one card per row, each cell its label above its value: no column squeezes a word letter by
     letter. The header row stays for screen readers only. */
  table.stack, table.stack tbody, table.stack tr, table.stack td { display: block; width: 100%; }
  table.stack thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
  table.stack tr { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 .75rem; padding: .25rem .75rem; }
  table.stack td { border: 0; padding: .3rem 0; }
  table.stack td.num { text-align: left; }
  table.stack td:empty { display: none; }
  table.stack td::before { content: attr(data-label); display: block; color: var(--muted); font-size: .8rem; font-weight: 600; }
  .table-wrap { overflow-x: visible; }
}
`;

// Draws each <canvas data-chart="{hours, series: [{label, data}]}"> as stacked bars with Chart.js.
const script = String.raw`
'use strict';
document.querySelectorAll('canvas[data-chart]').forEach(function (canvas) {
  var chart = JSON.parse(canvas.getAttribute('data-chart'));
  var colours = ['#116329', '#a40e26', '#9a6700', '#57606a'];
  new Chart(canvas, {
    type: 'bar',
    data: {
      labels: chart.hours,
      datasets: chart.series.map(function (series, i) {
        return { label: series.label, data: series.data, backgroundColor: colours[i % colours.length] };
      }),
    },
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } },
    },
  });
});
`;

/** Chart.js's browser build (UMD), from the package as installed. */
function chartJs(): string {
  // The package's exports map hides dist/; its CommonJS entry sits in dist/ beside the browser build.
  return readFileSync(join(dirname(require.resolve('chart.js')), 'chart.umd.min.js'), 'utf8');
}

export interface Asset {
  type: string;
  body: string;
}

let assets: Record<string, Asset> | undefined;

/** The console's assets by file name, read once. */
export function consoleAssets(): Record<string, Asset> {
  assets ??= {
    'console.css': { type: 'text/css; charset=utf-8', body: css },
    'console.js': { type: 'text/javascript; charset=utf-8', body: script },
    'chart.umd.min.js': { type: 'text/javascript; charset=utf-8', body: chartJs() },
  };
  return assets;
}
