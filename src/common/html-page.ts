/**
 * The look of the service's own small HTML pages (the sandbox's pages and billing's return pages): tiny, no
 * external assets, readable on a 375 px phone, working without script (a page may load one of this origin's,
 * as progressive enhancement). Every interpolated value goes through `esc`.
 */

export function esc(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// overflow-wrap:anywhere lets long ids (cs_test_… is 66 characters of one word) break instead of widening
// the page on a phone; a grid column needs minmax(0, …) to shrink below such a word. Below 34rem the card
// loses its side margins and border.
const STYLE = `
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f6f7f9;color:#1b1f24;overflow-wrap:anywhere}
main{max-width:32rem;margin:2rem auto;padding:1.5rem;background:#fff;border:1px solid #d0d5dc;border-radius:8px}
@media (max-width:34rem){main{margin:0;padding:1.25rem 1rem;border-width:0 0 1px;border-radius:0}}
.sandbox{margin:0;padding:.5rem 1rem;background:#fff3c4;color:#4a3800;text-align:center;font-weight:600}
h1{font-size:1.5rem;margin-top:0}h2{font-size:1.15rem}
dl{display:grid;grid-template-columns:auto minmax(0,1fr);gap:.25rem 1rem}dt{font-weight:600}dd{margin:0}
button{font:inherit;padding:.5rem 1.1rem;border-radius:6px;border:1px solid #1a4fd6;background:#1a4fd6;color:#fff;cursor:pointer}
a.button{display:inline-block;padding:.5rem 1.1rem;border-radius:6px;border:1px solid;text-decoration:none}
button.secondary,a.button.secondary{background:#fff;color:#a11a1a;border-color:#a11a1a}button.plain{background:#fff;color:#1a4fd6}
select,input{font:inherit;padding:.35rem;max-width:100%;box-sizing:border-box}input[type=number]{width:6rem}
fieldset{border:1px solid #d0d5dc;border-radius:6px;margin:1rem 0;padding:.5rem 1rem}label{margin-right:.5rem}fieldset label{display:block}
.note{color:#4b5563;font-size:.9rem}
a{color:#1a4fd6}
a:focus-visible,button:focus-visible,select:focus-visible,input:focus-visible{outline:3px solid #f5a300;outline-offset:2px}
form{margin:1rem 0}.actions{display:flex;gap:1rem;align-items:center;flex-wrap:wrap}
.error{border-left:4px solid #a11a1a;padding-left:1rem}.done{border-left:4px solid #116329;padding:.25rem 0 .25rem 1rem;color:#0b4a1f}
ul.plans{list-style:none;padding:0;margin:0;display:grid;grid-template-columns:minmax(0,1fr);gap:.75rem}ul.plans li{border:1px solid #d0d5dc;border-radius:6px;padding:0 1rem}ul.plans form{margin:.5rem 0 1rem}
h3{font-size:1rem;margin:1.5rem 0 .5rem}h4{font-size:1rem;margin:.75rem 0 .25rem}.total{font-size:1.1rem}
section+section{border-top:1px solid #d0d5dc;margin-top:1.5rem}
table{width:100%;border-collapse:collapse}caption{text-align:left;font-weight:600}td{border-top:1px solid #d0d5dc;padding:.35rem 0;vertical-align:top}td+td{text-align:right;padding-left:1rem;white-space:nowrap}`;

/** A whole page: the shared style, a viewport for phones, `note` as a banner above the content, `script` (a URL of this origin). */
export function htmlPage(title: string, body: string, note?: string, script?: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title><style>${STYLE}</style>${script ? `<script src="${esc(script)}" defer></script>` : ''}</head>
<body>${note ? `<p class="sandbox" role="note">${esc(note)}</p>` : ''}
<main>
${body}
</main></body></html>`;
}

