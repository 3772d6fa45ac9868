/**
 * node/proxy-status: the status file the agent's proxy rewrites after every
 * sync (`<runDir>/proxy-status.json`) and the one reader of it (`nodenet
 * proxy status`, the demo, the tests).
 */
import { isMissingFile, readJsonFile } from '../../../lib/state/read.js';
import type { Proxier } from '../proxy/proxier.js';
import { endpointString, type EndpointInfo, type ProxySnapshot } from '../proxy/types.js';
import { writeFileDurable } from '../../../lib/state/durable.js';

export interface ProxyStatus {
  readonly mode: string;
  readonly syncs: number;
  readonly ready: boolean;
  readonly lastSync: Proxier['lastSync'];
  /** spnString → endpoints ("ip:port", with "(not ready)" / "(terminating)" marks) as last applied. */
  readonly applied: Record<string, string[]>;
  readonly rejected: ReturnType<Proxier['rejected']>;
  readonly ignored: ReturnType<Proxier['ignored']>;
  readonly manifestErrors: Record<string, string>;
}

/** Where the agent writes the status in its run dir. */
export function proxyStatusFile(runDir: string): string {
  return `${runDir}/proxy-status.json`;
}

/** One ServicePort's endpoints as the status shows them: "ip:port", marked, sorted. */
function describeEndpoints(list: readonly EndpointInfo[]): string[] {
  return list.map((e) => `${endpointString(e)}${e.terminating ? ' (terminating)' : e.ready ? '' : ' (not ready)'}`).sort();
}

export function describeApplied(s: ProxySnapshot | null, cache?: AppliedCache): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (!s) return out;
  for (const name of sortedKeys(s.services.keys())) {
    const list = s.endpoints.get(name) ?? NO_ENDPOINTS;
    out[name] = cache ? cache.entry(list).desc : describeEndpoints(list);
  }
  return out;
}

const NO_ENDPOINTS: readonly EndpointInfo[] = [];

/** The keys sorted; a snapshot's already are (proxy/snapshot.ts), so this is one pass then. */
function sortedKeys(keys: Iterable<string>): string[] {
  const out = [...keys];
  for (let i = 1; i < out.length; i++) if (out[i - 1]! > out[i]!) return out.sort();
  return out;
}

/**
 * What describeApplied and writeProxyStatus computed per endpoint list,
 * kept while the list is alive: snapshots share the lists of the
 * ServicePorts a sync did not touch, so after a one-endpoint change at
 * 30,000 Services only one entry is computed again (the whole status took
 * ~200 ms per sync at that size, about half of it describing endpoints).
 */
export class AppliedCache {
  private readonly byList = new WeakMap<readonly EndpointInfo[], { readonly desc: string[]; readonly json: string }>();
  /** The status file's line per ServicePort, with the list it was made from. */
  private lines = new Map<string, { readonly list: readonly EndpointInfo[]; readonly line: string }>();
  private linesSeen = new Map<string, { readonly list: readonly EndpointInfo[]; readonly line: string }>();

  entry(list: readonly EndpointInfo[]): { readonly desc: string[]; readonly json: string } {
    let e = this.byList.get(list);
    if (!e) {
      const desc = describeEndpoints(list);
      // The array as JSON.stringify(status, null, 2) prints it at its depth (status → applied → list).
      const json = desc.length === 0 ? '[]' : `[\n${desc.map((d) => `      ${JSON.stringify(d)}`).join(',\n')}\n    ]`;
      this.byList.set(list, (e = { desc, json }));
    }
    return e;
  }

  /** `    "name": [...]`, as JSON.stringify(status, null, 2) prints the entry. */
  line(name: string, list: readonly EndpointInfo[]): string {
    let l = this.lines.get(name);
    if (!l || l.list !== list) l = { list, line: `    ${JSON.stringify(name)}: ${this.entry(list).json}` };
    this.linesSeen.set(name, l);
    return l.line;
  }

  /** After a pass over every name: forget the lines of names that are gone. */
  endPass(): void {
    this.lines = this.linesSeen;
    this.linesSeen = new Map();
  }
}

const APPLIED_PLACEHOLDER = '\u0000nodenet-applied\u0000';

/**
 * The status file's text: exactly JSON.stringify(status, null, 2) and a
 * newline. With the cache and the snapshot `applied` was described from,
 * the applied part is joined from the cached per-list text instead of
 * serialized again.
 */
export function formatProxyStatus(status: ProxyStatus, from?: { readonly snapshot: ProxySnapshot | null; readonly cache: AppliedCache }): string {
  if (!from?.snapshot) return `${JSON.stringify(status, null, 2)}\n`;
  const { snapshot, cache } = from;
  const parts: string[] = [];
  for (const name of sortedKeys(snapshot.services.keys())) parts.push(cache.line(name, snapshot.endpoints.get(name) ?? NO_ENDPOINTS));
  cache.endPass();
  const applied = parts.length === 0 ? '{}' : `{\n${parts.join(',\n')}\n  }`;
  const text = JSON.stringify({ ...status, applied: APPLIED_PLACEHOLDER }, null, 2);
  const mark = JSON.stringify(APPLIED_PLACEHOLDER);
  const at = text.indexOf(mark);
  return `${text.slice(0, at)}${applied}${text.slice(at + mark.length)}\n`;
}

export function writeProxyStatus(file: string, status: ProxyStatus, from?: { readonly snapshot: ProxySnapshot | null; readonly cache: AppliedCache }): void {
  writeFileDurable(file, formatProxyStatus(status, from), { mode: 0o644 });
}

/**
 * The status file's content, or null when it is missing (no agent with a
 * proxy ran with this run dir). A file that is there but is not a status
 * throws (a StateFileError naming the file and field).
 */
export function readProxyStatus(file: string): ProxyStatus | null {
  try {
    return readJsonFile(file, (r) => {
      // The fields the readers rely on are checked; the nested sync stats are the agent's own output.
      r.string('mode');
      r.int('syncs', { min: 0 });
      r.bool('ready');
      r.object('applied');
      return r.obj as unknown as ProxyStatus;
    });
  } catch (e) {
    if (isMissingFile(e)) return null;
    throw e;
  }
}
