/**
 * `nodenet demo ha`, the seeds' HA section, run as a user does, checked by what it printed, each fault with its
 * outcome, and nothing left behind (its own file: beside the two demos of demo.priv.test.ts it passed tap's
 * 300 s per file once every lab also ran the cluster's DNS replicas).
 */
import t from 'tap';
import { REPO } from '../agent/src/lab/lab.js';
import { runner, shOk } from '../agent/src/testing/lab.js';

const demoNamespaces = async () => (await shOk(['ip', 'netns', 'list'])).stdout.split('\n').filter((l) => /^nn-demoha[a-z0-9]+-/.test(l));

t.test('demo ha: the seeds\' HA section, each fault with its outcome, nothing left behind', async (t) => {
  const before = await demoNamespaces();
  const r = await runner.run([process.execPath, `${REPO}bin/nodenet.js`, 'demo', 'ha'], { allowFailure: true, timeoutMs: 280_000 });
  t.equal(r.exitCode, 0, r.stderr.slice(-2000) + r.stdout.slice(-3000));
  const out = r.stdout;
  t.match(out, /kubernetes +IPv4 +6443 +192\.168\.77\.241,192\.168\.77\.242/, 'both API servers in the kubernetes EndpointSlice');
  t.match(out, /kube-controller-manager +\S+_[0-9a-f-]{36}/, 'the leases and their holders');
  t.match(out, /killed etcd member \d \(192\.168\.77\.23\d:2379; the etcd leader\)/);
  // The bar has a '#' for each half second with acknowledged writes; on a loaded machine it has gaps besides the
  // election's, so the claim checked is: writes were acknowledged before the kill and again after it.
  const timeline = /writes per half second: ([#.]+) +\(the kill at ([\d.]+) s\)/.exec(out);
  t.ok(timeline, 'the writes\' timeline and the time of the kill');
  if (timeline) {
    const [bar, killS] = [timeline[1]!, Number(timeline[2])];
    const killBucket = Math.floor(killS * 2);
    t.match(bar.slice(0, killBucket), /#/, `writes acknowledged before the kill (${bar}, the kill at ${killS} s)`);
    t.match(bar.slice(killBucket + 1), /#/, `writes acknowledged after the kill (${bar}, the kill at ${killS} s)`);
  }
  t.match(out, /\d+ writes acknowledged, \d+ refused while there was no leader, the longest pause [\d.]+ s; lost: 0/, 'nothing acknowledged lost');
  t.match(out, /node2's agent watched the new Service \(10\.\d+\.\d+\.\d+\) through its balancer/, 'the agents carry on without a server');
  t.match(out, /[\d.]+ s after the kill it left the kubernetes EndpointSlice/);
  t.match(out, /[\d.]+ s later API server \d holds it/, 'the controller manager\'s lease changed hands');
  t.match(out, /replicaset\.apps\/web-\S+ +3 +3/, 'the scale made meanwhile reconciled by the new leader');
  t.match(out, /kubectl create service clusterip no-quorum\n +error: .*(quorum|etcd)/, 'without a quorum a write fails with a clear error');
  t.match(out, /quorum-back +ClusterIP/, 'quorum back: writes go on');
  const leader = /\n {3}(elector-\S+) leads: each replica/.exec(out)?.[1];
  t.ok(leader, 'one replica of the app leads, through its Lease');
  t.match(out, /elector +\S*elector-\S+ +\d+s/, 'kubectl get lease elector names it');
  const next = /[\d.]+ s later (elector-\S+) holds the Lease/.exec(out)?.[1];
  t.ok(next && next !== leader, `its Pod deleted, another replica leads: ${String(next)}`);
  // Step 5's replicas spread by required anti-affinity: one per node, the third Pending and why.
  const electors = [...out.matchAll(/\| (elector-\S+) +1\/1 +Running +\d+ +\S+ +10\.244\.\d+\.\d+ +(node\d)/g)].map((m) => m[2]);
  t.same([...electors].sort(), ['node1', 'node2'], 'two replicas run, on different nodes');
  t.match(out, /\| elector-\S+ +0\/1 +Pending +0 +\S+ +<none> +<none>/, 'the third is Pending');
  t.match(out, /Warning +FailedScheduling +\S+ +default-scheduler +0\/2 nodes are available: 2 node\(s\) didn't match pod anti-affinity rules\./, "upstream's words: why");
  t.same(await demoNamespaces(), before, 'no namespace left behind');
});
