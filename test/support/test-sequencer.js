// Jest's testSequencer (jest.config.js): Jest's own order (failed first, then longest by the last run's
// timings, else largest file), except that test/groups/long-running.e2e-spec.ts always starts first. Its specs
// spend most of their time waiting (a cron minute, child processes), and on a clean clone Jest has no timings
// and would start it last, when it would then run alone for a minute and more.
// Plain CommonJS: Jest requires this file as it is, before any transform.
const Sequencer = require('@jest/test-sequencer').default;

const FIRST = /[\\/]test[\\/]groups[\\/]long-running\.e2e-spec\.ts$/;

class LongRunningFirst extends Sequencer {
  sort(tests) {
    const sorted = super.sort(tests);
    return [...sorted.filter((t) => FIRST.test(t.path)), ...sorted.filter((t) => !FIRST.test(t.path))];
  }
}

module.exports = LongRunningFirst;
