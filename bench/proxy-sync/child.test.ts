import t from 'tap';
import { caseArgv, caseOutput, RESULT_MARK } from './child.js';

t.test('the case argv, and its result line read back', async (t) => {
  t.same(caseArgv('/x.mjs', { mode: 'ipvs', services: 10, netns: 'nn-bps-1' }, { repeat: 2, capS: 60, restart: false }),
    ['/x.mjs', '--case', 'ipvs:10', '--netns', 'nn-bps-1', '--repeat', '2', '--cap-s', '60', '--no-restart']);
  t.notOk(caseArgv('/x.mjs', { mode: 'nftables', services: 1, netns: 'n' }, { repeat: 1, capS: 1, restart: true }).includes('--no-restart'));
  t.same(caseOutput(`noise\n${RESULT_MARK}{"mode":"ipvs"}\n`), { mode: 'ipvs' });
  t.equal(caseOutput('no result here\n'), null);
  t.throws(() => caseOutput(`${RESULT_MARK}{not json`), SyntaxError);
});
