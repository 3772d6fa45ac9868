/**
 * proxy/iptables/jumps: the rules in built-in chains that lead into ours
 * (kube-proxy's iptablesJumpChains plus kubelet's KUBE-FIREWALL jumps):
 * INPUT ends up PROXY-FIREWALL, FIREWALL, NODEPORTS (health check ports),
 * EXTERNAL-SERVICES.
 *
 * Restore input cannot own these: declaring PREROUTING would mean rewriting
 * other software's rules in it. The proxier checks and inserts them on every
 * full sync (after the restore that creates the target chains) and removes
 * them on cleanup. Pure.
 */
import type { JumpRule } from '../../netfilter/iptables/iptables-types.js';
import { fixedChains } from './chains.js';

const NEW = ['-m', 'conntrack', '--ctstate', 'NEW'] as const;

/** In insertion order; every one is prepended, so the last listed for a chain ends up first in it. */
export function builtinJumps(prefix: string): JumpRule[] {
  const c = fixedChains(prefix);
  return [
    { table: 'filter', builtinChain: 'INPUT', target: c.externalServices, comment: 'kubernetes externally-visible service portals', extraArgs: NEW, position: 'prepend' },
    { table: 'filter', builtinChain: 'FORWARD', target: c.externalServices, comment: 'kubernetes externally-visible service portals', extraArgs: NEW, position: 'prepend' },
    { table: 'filter', builtinChain: 'INPUT', target: c.nodePorts, comment: 'kubernetes health check service ports', position: 'prepend' },
    { table: 'filter', builtinChain: 'FORWARD', target: c.services, comment: 'kubernetes service portals', extraArgs: NEW, position: 'prepend' },
    { table: 'filter', builtinChain: 'OUTPUT', target: c.services, comment: 'kubernetes service portals', extraArgs: NEW, position: 'prepend' },
    { table: 'filter', builtinChain: 'FORWARD', target: c.forward, comment: 'kubernetes forwarding rules', position: 'prepend' },
    { table: 'filter', builtinChain: 'INPUT', target: c.firewall, comment: '', position: 'prepend' },
    { table: 'filter', builtinChain: 'OUTPUT', target: c.firewall, comment: '', position: 'prepend' },
    { table: 'filter', builtinChain: 'INPUT', target: c.proxyFirewall, comment: 'kubernetes load balancer firewall', extraArgs: NEW, position: 'prepend' },
    { table: 'filter', builtinChain: 'OUTPUT', target: c.proxyFirewall, comment: 'kubernetes load balancer firewall', extraArgs: NEW, position: 'prepend' },
    { table: 'filter', builtinChain: 'FORWARD', target: c.proxyFirewall, comment: 'kubernetes load balancer firewall', extraArgs: NEW, position: 'prepend' },
    { table: 'nat', builtinChain: 'OUTPUT', target: c.services, comment: 'kubernetes service portals', position: 'prepend' },
    { table: 'nat', builtinChain: 'PREROUTING', target: c.services, comment: 'kubernetes service portals', position: 'prepend' },
    { table: 'nat', builtinChain: 'POSTROUTING', target: c.postrouting, comment: 'kubernetes postrouting rules', position: 'prepend' },
  ];
}
