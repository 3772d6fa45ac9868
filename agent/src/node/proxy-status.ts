/**
 * node/proxy-status: the status file the agent's proxy rewrites after every
 * sync (`<runDir>/proxy-status.json`) and the one reader of it (`nodenet
 * proxy status`, the demo, the tests).
 */
import { isMissingFile, readJsonFile } from '../state/read.js';
import type { Proxier } from '../proxy/proxier.js';
import { endpointString, type ProxySnapshot } from '../proxy/types.js';
import { writeFileDurable } from '../state/durable.js';

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

export function describeApplied(s: ProxySnapshot | null): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (!s) return out;
  for (const name of [...s.services.keys()].sort()) {
    out[name] = (s.endpoints.get(name) ?? []).map((e) => `${endpointString(e)}${e.terminating ? ' (terminating)' : e.ready ? '' : ' (not ready)'}`).sort();
  }
  return out;
}

export function writeProxyStatus(file: string, status: ProxyStatus): void {
  writeFileDurable(file, `${JSON.stringify(status, null, 2)}\n`, { mode: 0o644 });
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
