/**
 * cnitypes/nodenet-netconf: nodenet's own network config, the one place it
 * is written (`nodenet pod run`, the lab's nodes, the embedded kubelet, the
 * test VMs' nodes). Pure.
 *
 * The reference bridge plugin's semantics on the node's bridge: the bridge
 * is the pods' gateway and their default route, hairpin on (a pod reaching
 * itself through a Service comes back on its own port), IPAM host-local
 * from the node's pod CIDR (no subnet here: the agent fills it in). What
 * differs between the callers is an option: the bridge, where the shim finds
 * the agent, and ipMasq (off where the overlay masquerades). cnitypes/
 * netconf.ts parses what this writes; its test checks that it does.
 */
import { LATEST_VERSION, type CniVersion } from './version.js';
import { DEFAULT_BRIDGE } from './netconf.js';

/** The network's name and the plugin's executable. */
export const NODENET_NETWORK = 'nodenet';
export const NODENET_CNI_TYPE = 'nodenet-cni';

export interface NodenetNetConfOptions {
  /** The node's pod bridge; default cbr0. */
  readonly bridge?: string;
  /** The agent's CNI socket; absent: the shim's default (/run/nodenet/cni.sock). */
  readonly agentSocket?: string;
  /** Masquerade the pods' traffic leaving the cluster; absent: not written (the plugin's default, off). */
  readonly ipMasq?: boolean;
}

export type NodenetNetConf = {
  readonly cniVersion: CniVersion;
  readonly name: string;
  readonly type: string;
  readonly bridge: string;
  readonly isGateway: boolean;
  readonly isDefaultGateway: boolean;
  readonly hairpinMode: boolean;
  readonly ipMasq?: boolean;
  readonly agentSocket?: string;
  readonly ipam: { readonly type: 'host-local' };
};

/** nodenet's network config as a runtime hands it to the plugin (JSON.stringify it for stdin). */
export function nodenetNetConf(o: NodenetNetConfOptions = {}): NodenetNetConf {
  return {
    cniVersion: LATEST_VERSION,
    name: NODENET_NETWORK,
    type: NODENET_CNI_TYPE,
    bridge: o.bridge ?? DEFAULT_BRIDGE,
    isGateway: true,
    isDefaultGateway: true,
    hairpinMode: true,
    ...(o.ipMasq === undefined ? {} : { ipMasq: o.ipMasq }),
    ...(o.agentSocket === undefined ? {} : { agentSocket: o.agentSocket }),
    ipam: { type: 'host-local' },
  };
}
