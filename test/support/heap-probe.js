// Preloaded into a process under test (`node --expose-gc -r ./heap-probe.js …`): samples its live heap after
// a full collection, so garbage that the collector has not reclaimed yet does not count and the figure
// does not depend on when V8 chose to collect; at exit, writes the peak and the peak RSS to HEAP_PROBE_FILE.
/* global setInterval */
const { writeFileSync } = require('node:fs');

let peakHeap = 0;
const sample = () => {
  globalThis.gc();
  peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
};
setInterval(sample, Number(process.env.HEAP_PROBE_INTERVAL_MS || 1000)).unref();
process.on('exit', () => {
  sample();
  writeFileSync(process.env.HEAP_PROBE_FILE, JSON.stringify({ peakHeap, peakRss: process.resourceUsage().maxRSS * 1024 }));
});
