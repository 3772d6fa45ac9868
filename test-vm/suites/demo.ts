/**
 * `nodenet demo --proxy-mode ipvs` end to end on Debian's kernel (this
 * machine's has no IPVS): the demo a user runs with `npm start`, in IPVS
 * mode, inside one VM. The demo builds its own 2-node lab of namespaces
 * there (control plane, agents, kubelet pods through the CNI, VXLAN between
 * the nodes) and drives it with the real kubectl, which the runner copies in
 * (needsKubectl). Checked by what it printed, as test/demo.priv.test.ts
 * checks the iptables and nftables runs, with IPVS mode's own answers: the
 * ping to the ClusterIP refused at once (KUBE-IPVS-FILTER), kube-ipvs0
 * holding the VIPs, the IPVS table rewritten after `ipvsadm -C`. An extra
 * suite: under TCG it takes minutes that CI's budget cannot spare.
 */
import type { VmSuite } from '../suite.js';
import { AGENT_JS, NODE, runner } from '../guest/node.js';

/** What the output must show, with a name for the failure message. */
const EXPECT: readonly [string, RegExp][] = [
  ['both nodes Ready', /node1 +Ready .*192\.168\.77\.11[\s\S]*node2 +Ready .*192\.168\.77\.12/],
  ['the objects appearing', /\d\.\ds deployment +ADDED [\s\S]*\d\.\ds replicaset +ADDED [\s\S]*\d\.\ds pod +ADDED [\s\S]*\d\.\ds endpointslice +ADDED /],
  ['a pod Running with its IP and node', /pod +MODIFIED web-\S+ 1\/1 Running 0 \S+ 10\.244\.\d+\.\d+ node\d/],
  ['answers from pods on both nodes', /answered by web-\S+ +on node1[\s\S]*answered by web-\S+ +on node2|answered by web-\S+ +on node2[\s\S]*answered by web-\S+ +on node1/],
  ['the ping refused at once', /Destination Port Unreachable/],
  ['kube-ipvs0 holding the ClusterIP', /kube-ipvs0 .*10\.\d+\.\d+\.\d+\/32/],
  ['the virtual server of the ClusterIP', /TCP +10\.\d+\.\d+\.\d+:9000 rr/],
  ['the NodePort on both nodes', /192\.168\.77\.200 → 192\.168\.77\.11:30080 {2}web-[\s\S]*192\.168\.77\.200 → 192\.168\.77\.12:30080 {2}web-/],
  ['self-healing', /endpoints now: .*\(10\.244\.\d+\.\d+ gone\)/],
  ['the agent off the data path', /echo while it is down: answered/],
  ['a Service made while the agent is down, programmed after', /late answers: web-/],
  ['the old session after the restart', /the old session after the restart: answered/],
  ['ipvsadm -C', /ipvsadm -C/],
  ['the rules gone, then back', /right after: 0 virtual servers left\n.*a request right after: no answer \(the rules are gone\)\n.*agent resumed \(SIGCONT\)\n.*\d+\.\d s later: web-/],
  ['the whole path across the VXLAN device', /dev nodenet\.1 onlink; neighbour .* encapsulated \(VNI 1, UDP 8472\) to 192\.168\.77\.1\d \(node node\d\)/],
  ['cleaned up', /cleaning up/],
];

export const suite: VmSuite = {
  name: 'demo-ipvs', vms: 1, extra: true, needsKubectl: true, memoryMiB: 2048,
  timeoutSec: { kvm: 600, tcg: 2400 },
  run: async (ctx) => {
    const t0 = Date.now();
    const env = { PATH: `/nodenet/dist/vm/bin:${process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` };
    const r = await runner.run([NODE, AGENT_JS, 'demo', '--proxy-mode', 'ipvs'], { allowFailure: true, env, timeoutMs: 2_300_000 });
    ctx.log(`demo output:\n${r.stdout}\n${r.stderr.slice(-3000)}`);
    if (r.exitCode !== 0) throw new Error(`nodenet demo --proxy-mode ipvs exited ${r.exitCode}: ${r.stderr.trim().split('\n').slice(-5).join(' | ')}`);
    const missing = EXPECT.filter(([, re]) => !re.test(r.stdout)).map(([what]) => what);
    if (missing.length) throw new Error(`the demo's output lacks: ${missing.join('; ')}`);
    const left = (await runner.run(['ip', 'netns', 'list'])).stdout.split('\n').filter((l) => /^nn-demo/.test(l));
    if (left.length) throw new Error(`namespaces left behind: ${left.join(', ')}`);
    return `the demo in IPVS mode told all ${EXPECT.length} parts of its story in ${((Date.now() - t0) / 1000).toFixed(0)} s and left nothing behind`;
  },
};
