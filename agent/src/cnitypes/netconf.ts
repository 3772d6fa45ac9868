/**
 * cnitypes/netconf: the plugin configuration nodenet accepts on stdin, with the
 * reference `bridge` plugin's fields, parsed from bytes into a typed, defaulted
 * BridgeNetConf.
 *
 * The shim has already checked JSON, `name` and `cniVersion`; this parser
 * checks them again (embedded-mode pods and replayed DELs bypass the shim) and
 * everything else. Errors are NodenetErrors naming the field:
 * - bytes that are not a JSON object: NN_ERR_DECODING, CNI 6;
 * - a missing or unsupported cniVersion: IncompatibleVersionError, CNI 1;
 * - a field of the wrong type or out of range: NN_ERR_INVALID_CONFIG, CNI 7;
 * - a bridge feature nodenet does not implement (vlan, macspoofchk, ...) set
 *   to a non-default value: NN_ERR_UNSUPPORTED_FIELD, CNI 2.
 * Unknown keys are ignored, as other plugins' conventions may add them.
 * `ipam` stays unknown: the IPAM module parses it.
 */
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { dnsFrom } from './dns.js';
import {
  CNI_NAME_RE, invalidField, isInterfaceName, isIP, isIPPrefix, isObject, objectAt, optArray, optBool, optInt, optObject,
  optString, optStringArray, reqString, type JsonObject,
} from './fields.js';
import { parsePrevResult } from './prev-result.js';
import type { CniDNS, CniResult } from './result.js';
import { requireSupportedVersion, type CniVersion } from './version.js';
import { DEFAULT_AGENT_SOCKET } from '../../../proto/cni/v1/contract.js';

export const DEFAULT_BRIDGE = 'cbr0';
const ETHER_MAC_RE = /^[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}$/;
export { DEFAULT_AGENT_SOCKET };

/** One entry of GC's `cni.dev/valid-attachments`. */
export interface ValidAttachment {
  readonly containerId: string;
  readonly ifName: string;
}

export interface BridgeNetConf {
  readonly cniVersion: CniVersion;
  readonly name: string;
  readonly type: string;
  /** Default "cbr0". */
  readonly bridge: string;
  /** True also when isDefaultGateway is (as the bridge plugin does). */
  readonly isGateway: boolean;
  readonly isDefaultGateway: boolean;
  readonly forceAddress: boolean;
  readonly ipMasq: boolean;
  /** Absent: the caller decides (the link default, or the overlay's MTU). */
  readonly mtu?: number;
  readonly hairpinMode: boolean;
  readonly promiscMode: boolean;
  /** The raw `ipam` section, for the IPAM module; undefined when absent. */
  readonly ipam: unknown;
  readonly dns?: CniDNS;
  /** The preceding ADD's result, converted to the 1.1 shape (CHECK, DEL). */
  readonly prevResult?: CniResult;
  /** `{}` when absent. */
  readonly runtimeConfig: JsonObject;
  /** `{}` when absent. */
  readonly args: JsonObject;
  /** The pod interface's MAC asked for through runtimeConfig.mac (the "mac" capability) or args.cni.mac, in that order. */
  readonly mac?: string;
  /** IPs asked for through runtimeConfig.ips or args.cni.ips ("10.1.2.3" or "10.1.2.3/24"), in that order. */
  readonly requestedIPs: readonly string[];
  /** GC only: the attachments the runtime still knows; undefined when the key is absent. */
  readonly validAttachments?: readonly ValidAttachment[];
  /** Default "/run/nodenet/cni.sock". */
  readonly agentSocket: string;
  /** The shim's per-call deadline, when set. */
  readonly agentTimeoutMs?: number;
}

/** Bridge-plugin features nodenet does not implement; only their default value is accepted. */
const UNSUPPORTED: readonly { key: string; isDefault: (v: unknown) => boolean }[] = [
  { key: 'vlan', isDefault: (v) => v === 0 },
  { key: 'vlanTrunk', isDefault: (v) => Array.isArray(v) && v.length === 0 },
  { key: 'preserveDefaultVlan', isDefault: (v) => typeof v === 'boolean' },
  { key: 'macspoofchk', isDefault: (v) => v === false },
  { key: 'enabledad', isDefault: (v) => v === false },
  { key: 'disableContainerInterface', isDefault: (v) => v === false },
  { key: 'portIsolation', isDefault: (v) => v === false },
];

export function parseBridgeNetConf(raw: Uint8Array | string): BridgeNetConf {
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof raw === 'string' ? raw : new TextDecoder('utf-8', { fatal: true }).decode(raw));
  } catch (e) {
    throw new NodenetError(ErrorCode.DecodingFailure, `network config is not valid JSON: ${(e as Error).message}`);
  }
  if (!isObject(parsed)) throw new NodenetError(ErrorCode.DecodingFailure, 'network config is not a JSON object');
  const o = parsed;

  const cniVersion = requireSupportedVersion(o['cniVersion'], 'cniVersion');
  const name = reqString(o, 'name', '');
  if (!CNI_NAME_RE.test(name)) throw invalidField('name', `invalid characters in network name ${JSON.stringify(name)}`);
  const type = reqString(o, 'type', '');

  for (const u of UNSUPPORTED) {
    const v = o[u.key];
    if (v !== undefined && v !== null && !u.isDefault(v)) {
      throw new NodenetError(ErrorCode.UnsupportedField, `${u.key}: not supported by nodenet`, { details: u.key });
    }
  }

  const bridge = optString(o, 'bridge', '') || DEFAULT_BRIDGE;
  if (!isInterfaceName(bridge)) throw invalidField('bridge', `not a valid interface name: ${JSON.stringify(bridge)}`);

  const isDefaultGateway = optBool(o, 'isDefaultGateway', '') ?? false;
  const isGateway = (optBool(o, 'isGateway', '') ?? false) || isDefaultGateway;
  const mtu = optInt(o, 'mtu', '', 0, 65535);
  if (mtu !== undefined && mtu !== 0 && mtu < 68) throw invalidField('mtu', 'must be at least 68 (or 0 for the default)');

  const dnsRaw = optObject(o, 'dns', '');
  const prevRaw = o['prevResult'];
  const runtimeConfig = optObject(o, 'runtimeConfig', '') ?? {};
  const args = optObject(o, 'args', '') ?? {};

  const requestedIPs: string[] = [];
  const collectIPs = (list: string[] | undefined, field: string): void => {
    list?.forEach((s, i) => {
      if (!isIP(s) && !isIPPrefix(s)) throw invalidField(`${field}[${i}]`, `not an IP address: ${JSON.stringify(s)}`);
      requestedIPs.push(s);
    });
  };
  collectIPs(optStringArray(runtimeConfig, 'ips', 'runtimeConfig'), 'runtimeConfig.ips');
  const argsCni = optObject(args, 'cni', 'args');
  if (argsCni) collectIPs(optStringArray(argsCni, 'ips', 'args.cni'), 'args.cni.ips');

  const macOf = (from: JsonObject | undefined, path: string): string | undefined => {
    const m = from ? optString(from, 'mac', path) : undefined;
    if (m === undefined || m === '') return undefined;
    if (!ETHER_MAC_RE.test(m)) throw invalidField(`${path}.mac`, `not an Ethernet MAC address: ${JSON.stringify(m)}`);
    if (parseInt(m.slice(0, 2), 16) & 1) throw invalidField(`${path}.mac`, `${m} is a multicast address`);
    return m.toLowerCase();
  };
  const mac = macOf(runtimeConfig, 'runtimeConfig') ?? macOf(argsCni, 'args.cni');

  const agentSocket = optString(o, 'agentSocket', '') ?? DEFAULT_AGENT_SOCKET;
  if (!agentSocket.startsWith('/')) throw invalidField('agentSocket', 'must be an absolute path');
  const agentTimeoutMs = optInt(o, 'agentTimeoutMs', '', 1, 3_600_000);

  const out: { -readonly [K in keyof BridgeNetConf]: BridgeNetConf[K] } = {
    cniVersion,
    name,
    type,
    bridge,
    isGateway,
    isDefaultGateway,
    forceAddress: optBool(o, 'forceAddress', '') ?? false,
    ipMasq: optBool(o, 'ipMasq', '') ?? false,
    hairpinMode: optBool(o, 'hairpinMode', '') ?? false,
    promiscMode: optBool(o, 'promiscMode', '') ?? false,
    ipam: o['ipam'] ?? undefined,
    runtimeConfig,
    args,
    requestedIPs,
    agentSocket,
  };
  if (mtu !== undefined && mtu !== 0) out.mtu = mtu;
  if (mac !== undefined) out.mac = mac;
  if (dnsRaw) out.dns = dnsFrom(dnsRaw, 'dns');
  if (prevRaw !== undefined && prevRaw !== null) out.prevResult = parsePrevResult(prevRaw, cniVersion);
  const va = validAttachmentsFrom(o);
  if (va) out.validAttachments = va;
  if (agentTimeoutMs !== undefined) out.agentTimeoutMs = agentTimeoutMs;
  return out;
}

function validAttachmentsFrom(o: JsonObject): ValidAttachment[] | undefined {
  const key = 'cni.dev/valid-attachments';
  const list = optArray(o, key, '');
  return list?.map((raw, i) => {
    const a = objectAt(raw, `${key}[${i}]`);
    return { containerId: reqString(a, 'containerID', `${key}[${i}]`), ifName: reqString(a, 'ifname', `${key}[${i}]`) };
  });
}
