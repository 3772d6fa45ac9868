/**
 * `nodenet demo` (what `npm start` runs): parses the flags and runs the
 * story of lab/demo.ts, which prints itself as it goes.
 */
import { runDemo, type DemoDeps } from '../lab/demo.js';
import { runHaDemo } from '../lab/demo-ha.js';
import { FlagError, parseFlags } from './flags.js';
import { proxyModeFlag } from './lab-cmd.js';

export const DEMO_USAGE = `usage: nodenet demo [--keep] [--proxy-mode iptables|nftables|ipvs]
       nodenet demo ha
A 2-node cluster on this machine (network namespaces, the embedded control plane, one agent per node): a Deployment
of 3 pods behind a ClusterIP and a NodePort Service, traffic across nodes over VXLAN, a ClusterIP that takes TCP
but never answers a ping, self-healing, the agent off the data path, reconciliation, nodenet trace across nodes, and
scheduling: a replica Pending for cpu and why, scheduled when a third node joins.
--keep leaves the cluster running until Ctrl-C (with a KUBECONFIG for kubectl). --proxy-mode ipvs needs a kernel with
IPVS (the test-vm/ VMs or your own): without one, the demo refuses before it makes anything.
demo ha: the seeds' highly available control plane (3 etcd members, 2 API servers behind HAProxy, leader election)
in about a minute: the etcd leader killed under writes, an API server killed, the controller manager's leader
killed, quorum lost and back, each with real output; then an app's replicas spread one per node by pod
anti-affinity (the one too many Pending, and why), electing a leader among them.`;

export async function demoCommand(argv: readonly string[], deps: DemoDeps): Promise<number> {
  const p = parseFlags(argv, { keep: { type: 'boolean' }, 'proxy-mode': { type: 'string' } });
  if (p.help) {
    deps.stdout(`${DEMO_USAGE}\n`);
    return 0;
  }
  if (p.positional[0] === 'ha' && p.positional.length === 1 && !p.rest.length) {
    if (p.flags.size) throw new FlagError(`demo ha takes no flags (${[...p.flags.keys()].map((k) => `--${k}`).join(', ')})`);
    return runHaDemo(deps);
  }
  if (p.positional.length || p.rest.length) throw new FlagError(`unexpected argument ${JSON.stringify([...p.positional, ...p.rest][0])}`);
  return runDemo({ mode: proxyModeFlag(p), keep: p.flags.has('keep') }, deps);
}
