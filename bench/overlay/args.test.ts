import t from 'tap';
import { FlagError } from '../../agent/src/cli/flags.js';
import { CASES, defaultOut, parseBenchArgs, ROUTED_CASES } from './args.js';

t.test('defaults: 5 runs of 5 s, 1 stream, 200 pings at 5 ms, 2,000 round trips, every case, the dated file', async (t) => {
  t.same(parseBenchArgs([]), {
    durationS: 5, repeat: 5, streams: 1, omitS: 1, pings: 200, pingIntervalMs: 5, rr: 2000, cases: [...CASES], quick: false, out: null,
  });
  t.ok(['cross-node-hostgw', 'cross-node-bgp'].every((c) => parseBenchArgs([]).cases.includes(c as never)), 'host-gw and BGP by default, in the same run as VXLAN');
  t.same(ROUTED_CASES, { 'cross-node-hostgw': 'host-gw', 'cross-node-bgp': 'bgp' });
});

t.test('--quick shrinks the figures; explicit flags still win', async (t) => {
  const q = parseBenchArgs(['--quick']);
  t.match(q, { quick: true, durationS: 2, repeat: 1, pings: 50, rr: 500, streams: 1 });
  t.match(parseBenchArgs(['--quick', '--duration', '10', '--repeat=5']), { durationS: 10, repeat: 5, pings: 50 });
});

t.test('flags as the brief spells them', async (t) => {
  const a = parseBenchArgs(['--duration', '30', '--repeat', '7', '--streams', '4', '--omit', '0', '--pings', '0', '--ping-interval-ms', '10', '--rr', '0', '--out', 'bench/overlay/results/x.json']);
  t.match(a, { durationS: 30, repeat: 7, streams: 4, omitS: 0, pings: 0, pingIntervalMs: 10, rr: 0, out: 'bench/overlay/results/x.json' });
  t.same(parseBenchArgs(['--cases', 'underlay,cross-node']).cases, ['cross-node', 'underlay'], 'the table keeps the a, b, c order');
  t.same(parseBenchArgs(['--cases', 'bare-pods,cross-node,underlay']).cases, ['cross-node', 'underlay', 'bare-pods'], 'and the bare ones after');
  t.same(parseBenchArgs(['--cases', 'cross-node-bgp,bare-routed-conntrack,cross-node-hostgw,cross-node,underlay']).cases,
    ['cross-node', 'underlay', 'bare-routed-conntrack', 'cross-node-hostgw', 'cross-node-bgp'], 'the routed backends last: (i) host-gw, (j) BGP');
});

t.test('bad input names the flag', async (t) => {
  t.throws(() => parseBenchArgs(['--duration', '0']), /--duration: 0 is outside 1\.\.600/);
  t.throws(() => parseBenchArgs(['--duration', '2.5']), /--duration: "2\.5" is not a whole number/);
  t.throws(() => parseBenchArgs(['--repeat', '0']), /--repeat: 0 is outside 1\.\.50/);
  t.throws(() => parseBenchArgs(['--streams', '100']), /--streams: 100 is outside 1\.\.64/);
  t.throws(() => parseBenchArgs(['--ping-interval-ms', '0']), /--ping-interval-ms: 0 is outside/);
  t.throws(() => parseBenchArgs(['--cases', 'wan']), /--cases: unknown case "wan" \(one of same-node, cross-node, underlay, bare-vxlan, bare-pods, bare-pods-conntrack, bare-routed, bare-routed-conntrack, cross-node-hostgw, cross-node-bgp\)/);
  t.throws(() => parseBenchArgs(['--cases', 'underlay,underlay']), /repeats a value/);
  t.throws(() => parseBenchArgs(['--cases', ',']), /--cases needs at least one value/);
  t.throws(() => parseBenchArgs(['--out', '']), /--out needs a file name/);
  t.throws(() => parseBenchArgs(['--quick=yes']), FlagError, 'a value for a boolean flag is refused');
  t.throws(() => parseBenchArgs(['-P', '4']), FlagError, 'unknown flag');
  t.throws(() => parseBenchArgs(['extra']), /unexpected argument "extra"/);
  t.throws(() => parseBenchArgs(['-h']), /^usage: npm run bench:overlay/);
});

t.test('the dated default follows the other benches: results/YYYY-MM-DD.json, in UTC', async (t) => {
  t.equal(defaultOut(new Date('2026-12-01T23:59:00Z')), 'bench/overlay/results/2026-12-01.json');
  t.equal(defaultOut(new Date('2027-01-02T00:00:01Z')), 'bench/overlay/results/2027-01-02.json');
});
