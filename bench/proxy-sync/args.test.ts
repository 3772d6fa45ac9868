import t from 'tap';
import { FlagError } from '../../agent/src/cli/flags.js';
import { caseNetns, parseBenchArgs } from './args.js';

t.test('defaults: all three sizes, both modes, 3 changes, 600 s cap, restart on, no JSON', async (t) => {
  t.same(parseBenchArgs([]), { sizes: [1000, 10000, 30000], modes: ['iptables', 'nftables'], repeat: 3, capS: 600, restart: true, out: null, case: null });
});

t.test('flags as the issue spells them', async (t) => {
  const a = parseBenchArgs(['--sizes', '1000,10000', '--modes', 'nftables', '--repeat', '5', '--out', 'bench/proxy-sync/results/x.json', '--no-restart', '--cap-s=120']);
  t.same(a.sizes, [1000, 10000]);
  t.same(a.modes, ['nftables']);
  t.equal(a.repeat, 5);
  t.equal(a.capS, 120);
  t.equal(a.restart, false);
  t.equal(a.out, 'bench/proxy-sync/results/x.json');
  t.same(parseBenchArgs(['--modes', 'iptables-legacy,iptables']).modes, ['iptables-legacy', 'iptables']);
});

t.test('the internal --case form', async (t) => {
  const a = parseBenchArgs(['--case', 'nftables:10000', '--netns', 'nn-bps-42-nftables-10000', '--repeat', '3']);
  t.same(a.case, { mode: 'nftables', services: 10000, netns: 'nn-bps-42-nftables-10000' });
  t.equal(caseNetns(42, 'nftables', 10000), 'nn-bps-42-nftables-10000');
  t.throws(() => parseBenchArgs(['--case', 'nftables:10']), FlagError, '--case needs --netns');
  t.throws(() => parseBenchArgs(['--case', 'nftables:10', '--netns', 'eth0']), FlagError, 'a namespace outside nn-bps- is refused');
  t.throws(() => parseBenchArgs(['--case', 'userspace:10', '--netns', 'nn-bps-1']), /unknown mode "userspace"/);
  t.throws(() => parseBenchArgs(['--case', 'nftables', '--netns', 'nn-bps-1']), /MODE:SIZE/);
  t.throws(() => parseBenchArgs(['--netns', 'nn-bps-1']), /only valid with --case/);
  t.throws(() => parseBenchArgs(['--case', 'nftables:2', '--netns', 'nn-bps-1', '--repeat', '3']), /exceeds the 2 Services/);
});

t.test('bad input is refused with the flag named', async (t) => {
  t.throws(() => parseBenchArgs(['--sizes', '1000,abc']), /--sizes: "abc" is not a whole number/);
  t.throws(() => parseBenchArgs(['--sizes', '0']), /--sizes: 0 is outside/);
  t.throws(() => parseBenchArgs(['--sizes', '40000']), /--sizes: 40000 is outside 1\.\.32000/);
  t.throws(() => parseBenchArgs(['--sizes', '100,100']), /repeats a value/);
  t.throws(() => parseBenchArgs(['--sizes', ',']), /at least one value/);
  t.throws(() => parseBenchArgs(['--modes', 'kernelspace']), /unknown mode/);
  t.throws(() => parseBenchArgs(['--repeat', '0']), /--repeat: 0 is outside/);
  t.throws(() => parseBenchArgs(['--repeat', '-1']), FlagError);
  t.throws(() => parseBenchArgs(['--repeat']), /needs a value/);
  t.throws(() => parseBenchArgs(['--out=']), /--out needs a file name/);
  t.throws(() => parseBenchArgs(['--bogus', '1']), /unknown flag --bogus/);
  t.throws(() => parseBenchArgs(['extra']), /unexpected argument "extra"/);
  t.throws(() => parseBenchArgs(['--sizes', '2', '--repeat', '3']), /exceeds the 2 Services/);
  t.throws(() => parseBenchArgs(['--help']), /usage:/);
});
