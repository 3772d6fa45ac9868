import t from 'tap';
import { FlagError } from '../../agent/src/cli/flags.js';
import { parseBenchArgs } from './args.js';

t.test('defaults: both modes, 10,000 Services, a 100-Service contrast, 50 changes, no JSON', async (t) => {
  t.same(parseBenchArgs([]), {
    modes: ['iptables', 'nftables'], services: 10_000, small: 100, changes: 50, minSyncMs: 100, loadConcurrency: 16, timeoutS: 900, quick: false, out: null, cpuProf: null, keepLogs: null,
  });
});

t.test('--quick shrinks the sizes; explicit flags still win', async (t) => {
  const q = parseBenchArgs(['--quick']);
  t.equal(q.quick, true);
  t.equal(q.services, 1000);
  t.equal(q.changes, 20);
  t.equal(q.small, 100);
  t.equal(parseBenchArgs(['--quick', '--services', '2000', '--changes=5']).services, 2000);
  t.equal(parseBenchArgs(['--quick', '--services', '2000', '--changes=5']).changes, 5);
});

t.test('flags as the brief spells them', async (t) => {
  const a = parseBenchArgs(['--modes', 'nftables,iptables-legacy', '--services', '30000', '--changes', '10', '--small', '0', '--min-sync-ms', '0', '--out', 'bench/programming/results/x.json']);
  t.same(a.modes, ['nftables', 'iptables-legacy']);
  t.equal(a.services, 30_000);
  t.equal(a.small, 0, '0 skips the contrast case');
  t.equal(a.minSyncMs, 0);
  t.equal(a.out, 'bench/programming/results/x.json');
  t.same([parseBenchArgs(['--cpu-prof', '/tmp/p']).cpuProf, parseBenchArgs(['--keep-logs', '/tmp/l']).keepLogs], ['/tmp/p', '/tmp/l']);
});

t.test('bad input names the flag', async (t) => {
  t.throws(() => parseBenchArgs(['--modes', 'ipvs']), /--modes: unknown mode "ipvs"/);
  t.throws(() => parseBenchArgs(['--modes', 'nftables,nftables']), /--modes: nftables,nftables repeats a value/);
  t.throws(() => parseBenchArgs(['--modes', ',']), /--modes needs at least one value/);
  t.throws(() => parseBenchArgs(['--services', '10k']), /--services: "10k" is not a whole number/);
  t.throws(() => parseBenchArgs(['--services', '40000']), /--services: 40000 is outside 1\.\.32000/);
  t.throws(() => parseBenchArgs(['--small', '10000']), /--small 10000 must be below --services 10000/);
  t.throws(() => parseBenchArgs(['--small', '20', '--changes', '50']), /--changes 50 exceeds the 20 Services of --small/);
  t.throws(() => parseBenchArgs(['--services', '30', '--small', '0', '--changes', '50']), /exceeds the 30 Services of --services/);
  t.throws(() => parseBenchArgs(['--out', '']), /--out needs a file name/);
  t.throws(() => parseBenchArgs(['--cpu-prof', '']), /--cpu-prof needs a directory/);
  t.throws(() => parseBenchArgs(['--keep-logs=']), /--keep-logs needs a directory/);
  t.throws(() => parseBenchArgs(['--quick=yes']), FlagError, 'a value for a boolean flag is refused');
  t.throws(() => parseBenchArgs(['--sizes', '1000']), FlagError, 'unknown flag');
  t.throws(() => parseBenchArgs(['extra']), /unexpected argument "extra"/);
  t.throws(() => parseBenchArgs(['-h']), /^usage: npm run bench:programming/);
});
