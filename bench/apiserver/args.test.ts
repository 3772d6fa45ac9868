import t from 'tap';
import { FlagError } from '../../agent/src/cli/flags.js';
import { parseBenchArgs } from './args.js';

t.test('defaults: the sizes the brief names', async (t) => {
  t.same(parseBenchArgs([]), {
    quick: false, services: 10_000, slices: 20_000, creates: 2000, concurrency: [1, 16], paced: 5000, slope: 30_000, qps: 200,
    watchers: [10, 100], watchWrites: 300, listRepeat: 5, loadConcurrency: 16, logLevel: 'info', storage: ['sqlite'], etcdMembers: 3, floorWrites: 2000, failover: 0, out: null,
  });
});

t.test('--quick: smaller sizes; explicit flags win over them', async (t) => {
  const q = parseBenchArgs(['--quick']);
  t.match(q, { quick: true, services: 1000, slices: 2000, creates: 300, paced: 600, slope: 3000, watchWrites: 100, listRepeat: 3, watchers: [10, 100], concurrency: [1, 16], floorWrites: 300 });
  t.match(parseBenchArgs(['--quick', '--services', '500', '--slices=0']), { quick: true, services: 500, slices: 0, creates: 300 });
  t.match(parseBenchArgs(['--slope', '0', '--services', '40000']), { slope: 0, services: 40_000 }, '--slope 0 skips the last point');
});

t.test('flags', async (t) => {
  const a = parseBenchArgs(['--concurrency', '1,4,16', '--watchers', '1', '--paced', '0', '--qps', '50', '--log-level', 'silent', '--out', 'bench/apiserver/results/x.json', '--load-concurrency', '32', '--list-repeat', '2', '--watch-writes', '10', '--creates', '100']);
  t.match(a, { concurrency: [1, 4, 16], watchers: [1], paced: 0, qps: 50, logLevel: 'silent', out: 'bench/apiserver/results/x.json', loadConcurrency: 32, listRepeat: 2, watchWrites: 10, creates: 100 });
});

t.test('--storage: sqlite (the default), etcd, or both in the order given; --etcd-members odd', async (t) => {
  t.same(parseBenchArgs(['--storage', 'etcd']).storage, ['etcd']);
  t.same(parseBenchArgs(['--storage', 'sqlite,etcd', '--etcd-members', '5', '--floor-writes', '100']), { ...parseBenchArgs([]), storage: ['sqlite', 'etcd'], etcdMembers: 5, floorWrites: 100 });
  t.equal(parseBenchArgs(['--storage', 'etcd', '--failover', '3']).failover, 3, 'failover rounds on etcd');
  t.throws(() => parseBenchArgs(['--failover', '3']), /--failover: the failover figures are the HA control plane's, on etcd/);
  t.same(parseBenchArgs(['--storage', 'etcd,sqlite']).storage, ['etcd', 'sqlite']);
  t.same(parseBenchArgs(['--storage', 'etcd', '--etcd-members', '1']).etcdMembers, 1);
  t.throws(() => parseBenchArgs(['--storage', 'postgres']), /--storage: "postgres" is not sqlite or etcd/);
  t.throws(() => parseBenchArgs(['--storage', 'etcd,etcd']), /repeats a value/);
  t.throws(() => parseBenchArgs(['--storage', 'etcd', '--etcd-members', '4']), /--etcd-members: 4 is even/);
  t.throws(() => parseBenchArgs(['--storage', 'etcd', '--etcd-members', '9']), /outside 1\.\.7/);
  t.throws(() => parseBenchArgs(['--etcd-members', '3']), /only with --storage etcd/);
});

t.test('bad input is refused with the flag named', async (t) => {
  t.throws(() => parseBenchArgs(['--services', 'ten']), /--services: "ten" is not a whole number/);
  t.throws(() => parseBenchArgs(['--services', '0']), /--services: 0 is outside 1\.\.60000/);
  t.throws(() => parseBenchArgs(['--slices', '60001']), /--slices: 60001 is outside/);
  t.throws(() => parseBenchArgs(['--watchers', '10,10']), /repeats a value/);
  t.throws(() => parseBenchArgs(['--watchers', '201']), /--watchers: 201 is outside 1\.\.200/);
  t.throws(() => parseBenchArgs(['--concurrency', ',']), /at least one value/);
  t.throws(() => parseBenchArgs(['--concurrency', '0']), /outside 1\.\.256/);
  t.throws(() => parseBenchArgs(['--qps', '-5']), FlagError);
  t.throws(() => parseBenchArgs(['--slope', '10000']), /--slope: 10000 must be above --services \(10000\)/);
  t.throws(() => parseBenchArgs(['--slope', '60001']), /--slope: 60001 is outside 0\.\.60000/);
  t.throws(() => parseBenchArgs(['--log-level', 'loud']), /--log-level: "loud" is not one of/);
  t.throws(() => parseBenchArgs(['--out=']), /--out needs a file name/);
  t.throws(() => parseBenchArgs(['--quick=yes']), /takes no value/);
  t.throws(() => parseBenchArgs(['--creates']), /needs a value/);
  t.throws(() => parseBenchArgs(['--bogus']), /unknown flag --bogus/);
  t.throws(() => parseBenchArgs(['extra']), /unexpected argument "extra"/);
  t.throws(() => parseBenchArgs(['-h']), /usage: npm run bench:apiserver/);
});
