/**
 * netfilter/ipset-parse: ipset's text forms, for the sets IPVS mode uses
 * (kube-proxy's pkg/proxy/ipvs/ipset.go types). Pure.
 *
 * Entries are kept in the canonical form `ipset save` prints them, so a
 * set's desired members and its listed members compare as strings:
 *   hash:ip           10.96.0.10
 *   hash:ip,port      10.96.0.10,tcp:80
 *   hash:ip,port,ip   10.244.1.2,tcp:8080,10.244.1.2
 *   hash:ip,port,net  192.168.99.10,tcp:80,203.0.113.0/24  (a /32 net without "/32")
 *   bitmap:port       30080
 * A batch goes to one `ipset restore -exist` (create of an existing set of
 * the same type, add of a member present, del of one absent: no error).
 */
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';

export type IpsetType = 'hash:ip' | 'hash:ip,port' | 'hash:ip,port,ip' | 'hash:ip,port,net' | 'bitmap:port';
export const IPSET_TYPES: readonly IpsetType[] = ['hash:ip', 'hash:ip,port', 'hash:ip,port,ip', 'hash:ip,port,net', 'bitmap:port'];
/** IPSET_MAXNAMELEN - 1. */
export const MAX_SET_NAME = 31;

export interface IpsetState {
  readonly name: string;
  readonly type: IpsetType;
  readonly entries: ReadonlySet<string>;
}

export type IpsetOp =
  | { readonly op: 'create'; readonly name: string; readonly type: IpsetType }
  | { readonly op: 'add'; readonly name: string; readonly entry: string }
  | { readonly op: 'del'; readonly name: string; readonly entry: string }
  | { readonly op: 'flush'; readonly name: string }
  | { readonly op: 'destroy'; readonly name: string };

/** The create options kube-proxy uses (hashsize 1024, maxelem 65536; the full port range for bitmaps). */
export function createOptions(type: IpsetType): string {
  return type === 'bitmap:port' ? 'range 0-65535' : 'family inet hashsize 1024 maxelem 65536';
}

const IP = String.raw`(?:\d{1,3}\.){3}\d{1,3}`;
const PP = String.raw`(?:tcp|udp|sctp):\d{1,5}`;
const ENTRY_RE: Readonly<Record<IpsetType, RegExp>> = {
  'hash:ip': new RegExp(`^${IP}$`),
  'hash:ip,port': new RegExp(`^${IP},${PP}$`),
  'hash:ip,port,ip': new RegExp(`^${IP},${PP},${IP}$`),
  'hash:ip,port,net': new RegExp(`^${IP},${PP},${IP}(?:/\\d{1,2})?$`),
  'bitmap:port': /^\d{1,5}$/,
};

/** The canonical form of an entry (a trailing /32 on a net dropped); throws when it does not fit the type. */
export function canonicalEntry(type: IpsetType, entry: string): string {
  const e = type === 'hash:ip,port,net' ? entry.replace(/\/32$/, '') : entry;
  if (!ENTRY_RE[type].test(e)) throw new NodenetError(ErrorCode.InvalidConfig, `ipset entry ${JSON.stringify(entry)} is not a ${type} element`);
  return e;
}

function checkName(name: string): string {
  if (name === '' || name.length > MAX_SET_NAME || /\s/.test(name)) throw new NodenetError(ErrorCode.InvalidConfig, `ipset name ${JSON.stringify(name)} must be 1-${MAX_SET_NAME} characters without spaces`);
  return name;
}

/** `ipset restore` input, one line per op, in order. */
export function renderIpsetRestore(ops: readonly IpsetOp[]): string {
  const lines = ops.map((o) => {
    const n = checkName(o.name);
    switch (o.op) {
      case 'create': return `create ${n} ${o.type} ${createOptions(o.type)}`;
      case 'add': return `add ${n} ${o.entry}`;
      case 'del': return `del ${n} ${o.entry}`;
      case 'flush': return `flush ${n}`;
      case 'destroy': return `destroy ${n}`;
    }
  });
  return lines.length ? `${lines.join('\n')}\n` : '';
}

/**
 * Parses `ipset save` (or `ipset save NAME`): every set with its type and
 * entries. Sets of types IPVS mode does not use are kept with their
 * entries as printed only when `keep` accepts their name.
 */
export function parseIpsetSave(text: string, keep: (name: string) => boolean = () => true): Map<string, IpsetState> {
  const sets = new Map<string, { name: string; type: IpsetType; entries: Set<string> }>();
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    const w = line.split(/\s+/);
    const [verb, name, arg] = w;
    if (!name || !keep(name)) return;
    if (verb === 'create') {
      if (!(IPSET_TYPES as readonly string[]).includes(arg ?? '')) {
        throw new NodenetError(ErrorCode.Internal, `ipset save line ${i + 1}: set ${name} has type ${arg ?? '(none)'}, not one IPVS mode writes`);
      }
      sets.set(name, { name, type: arg as IpsetType, entries: new Set() });
      return;
    }
    if (verb === 'add') {
      const s = sets.get(name);
      if (!s || arg === undefined) throw new NodenetError(ErrorCode.Internal, `ipset save line ${i + 1}: add to a set not created before: ${JSON.stringify(line)}`);
      s.entries.add(canonicalEntry(s.type, arg));
      return;
    }
    throw new NodenetError(ErrorCode.Internal, `ipset save line ${i + 1}: unknown command: ${JSON.stringify(line)}`);
  });
  return sets;
}

/** Splits "10.96.0.10,tcp:80,10.0.0.0/8" into its parts (for the tracer's set matching). */
export function entryParts(type: IpsetType, entry: string): { ip?: string; proto?: string; port?: number; ip2?: string; net?: string } {
  if (type === 'bitmap:port') return { port: Number(entry) };
  const [ip, pp, third] = entry.split(',');
  const out: { ip?: string; proto?: string; port?: number; ip2?: string; net?: string } = { ip: ip! };
  if (pp) {
    const [proto, port] = pp.split(':');
    out.proto = proto!;
    out.port = Number(port);
  }
  if (third !== undefined) {
    if (type === 'hash:ip,port,net') out.net = third.includes('/') ? third : `${third}/32`;
    else out.ip2 = third;
  }
  return out;
}
