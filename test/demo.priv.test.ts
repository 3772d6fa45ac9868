/**
 * `npm start` is the first thing a user runs: the demo must tell its whole
 * story in both proxy modes and leave nothing behind. Runs the built CLI as
 * a user does, and checks each step by what it printed (the demo itself
 * waits for the state each step needs, through the API).
 */
import t from 'tap';
import { REPO } from '../agent/src/lab/lab.js';
import { runner, shOk } from '../agent/src/testing/lab.js';

// The demo's namespaces (nn-demo<random>-*), not demo ha's (nn-demoha<random>-*, demo-ha.priv.test.ts), which may run beside it.
const demoNamespaces = async () => (await shOk(['ip', 'netns', 'list'])).stdout.split('\n').filter((l) => /^nn-demo(?!ha)[a-z0-9]+-/.test(l));

// Two demos of up to 270 s each: more than tap's 300 s per file.
t.setTimeout(600_000);

for (const mode of ['iptables', 'nftables'] as const) {
  t.test(`demo in ${mode} mode`, async (t) => {
    const before = await demoNamespaces();
    // About 100 s alone; twice that beside other suites on a 2-core machine.
    const r = await runner.run([process.execPath, `${REPO}bin/nodenet.js`, 'demo', '--proxy-mode', mode], { allowFailure: true, timeoutMs: 270_000 });
    t.equal(r.exitCode, 0, r.stderr.slice(-2000) + r.stdout.slice(-3000));
    const out = r.stdout;
    t.match(out, /node1 +Ready .*192\.168\.77\.11/, 'both nodes registered and Ready');
    t.match(out, /node2 +Ready .*192\.168\.77\.12/);
    // 1. the objects appearing, as kubectl get -w shows them
    for (const kind of ['deployment', 'replicaset', 'pod', 'endpointslice']) t.match(out, new RegExp(`\\d\\.\\ds ${kind} +ADDED `), `a ${kind} appeared`);
    t.match(out, /pod +MODIFIED web-\S+ 1\/1 Running 0 \S+ 10\.244\.\d+\.\d+ node\d/, 'a pod became ready, with its IP and node');
    // 2. requests across nodes, the client's pod IP seen by the backend
    const client = /client \((10\.244\.\d+\.\d+), node1\)/.exec(out)?.[1];
    t.ok(client, 'the client pod has an IP');
    const answers = [...out.matchAll(/→ \S+:9000 {2}answered by (web-\S+) +on (node\d) +it saw the client as (\S+):\d+/g)];
    t.ok(answers.length >= 8, 'answers printed');
    t.same([...new Set(answers.map((a) => a[2]))].sort(), ['node1', 'node2'], 'pods on both nodes answered the ClusterIP');
    t.same([...new Set(answers.map((a) => a[3]))], [client], 'every backend saw the client pod\'s own IP (no NAT across nodes)');
    // 3. ping and its trace
    t.match(out, mode === 'iptables' ? /1 packets transmitted, 0 received, 100% packet loss/ : /Destination Port Unreachable/);
    t.match(out, mode === 'iptables' ? /destination: ACCEPT \(not redirected/ : /destination: REJECT/);
    // 4. NodePort from the underlay, on both nodes
    t.match(out, /192\.168\.77\.200 → 192\.168\.77\.11:30080 {2}web-/);
    t.match(out, /192\.168\.77\.200 → 192\.168\.77\.12:30080 {2}web-/);
    // 5. self-healing
    t.match(out, /endpoints now: .*\(10\.244\.\d+\.\d+ gone\)/);
    t.match(out, /web-\S+ is no longer chosen/);
    // 6. the agent off the data path
    t.match(out, /echo while it is down: answered/);
    t.match(out, /a new Service "late" \(\S+\) from node1 while its agent is down: no answer/);
    t.match(out, /late answers: web-/);
    t.match(out, /the old session after the restart: answered/);
    // 7. reconciliation
    // The agent is paused while the rules are removed, counted and tried, then resumed: it repairs them.
    t.match(out, mode === 'iptables' ? /right after: 0 KUBE- rules in the nat table left/ : /right after: 0 kube-proxy tables left/, 'the rules were gone');
    t.match(out, /a request right after: no answer \(the rules are gone\)/, 'a request found no rules while the agent was paused');
    t.match(out, /node1's agent resumed \(SIGCONT\)\n.*\d+\.\d s later: web-/, 'the resumed agent put the rules back');
    t.match(out, /\d+\.\d s later: web-/);
    // 8. the whole path
    t.match(out, new RegExp(`nodenet trace --lab \\S+ ${client?.replace(/\./g, '\\.')} tcp`));
    t.match(out, /dev nodenet\.1 onlink; neighbour .* encapsulated \(VNI 1, UDP 8472\) to 192\.168\.77\.1\d \(node node\d\)/, 'a cross-node path through the VXLAN device');
    t.match(out, /bridged on cbr0 to the pod/);
    // 9. scheduling: one replica Pending for cpu, placed when a third node joins
    const nine = out.slice(out.indexOf('== 9. scheduling'));
    t.ok(out.includes('== 9. scheduling'), 'step 9 ran');
    t.match(nine, /\| big-\S+ +0\/1 +Pending +0 +\S+ +<none> +<none>/, 'one replica Pending, on no node');
    t.match(nine, /kubectl describe pod (big-\S+)\n(.*\n)*? +\| Status: +Pending\n/, 'describe of the Pending one');
    t.match(nine, /Warning +FailedScheduling +\S+ +default-scheduler +0\/2 nodes are available: 2 Insufficient cpu\. preemption: /, "upstream's words: why it fits nowhere");
    t.match(nine, /node3 added, configured as the others: namespace nn-demo\S+-node3, underlay 192\.168\.77\.13\/24, agent pid \d+/);
    const after = nine.slice(nine.indexOf('node3 added'));
    const placed = [...after.matchAll(/\| (big-\S+) +1\/1 +Running +\d+ +\S+ +10\.244\.\d+\.\d+ +(node\d)/g)].map((m) => m[2]).sort();
    t.same(placed, ['node1', 'node2', 'node3'], 'then all three run, the one that was Pending on node3');
    t.notMatch(after, /\| big-\S+ .*Pending/, 'none Pending after node3 joined');
    t.match(out, /cleaning up/);
    t.same(await demoNamespaces(), before, 'no namespace left behind');
  });
}
