/**
 * netfilter/ipvs-probe: does this kernel have IPVS? Asked before a command
 * builds anything that needs it (`nodenet lab up --proxy-mode ipvs`, `nodenet
 * demo --proxy-mode ipvs`), so that the user gets one clear refusal instead
 * of agents that die one by one.
 *
 * The kernel has IPVS when /proc/net/ip_vs exists (the ip_vs module, built
 * in or loaded, registers it in every network namespace). When it does not,
 * `modprobe ip_vs` is tried once through the Runner (where modules exist it
 * loads it, as the agent does at start) and the file is looked for again.
 */
import { existsSync } from 'node:fs';
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import type { Runner } from '../../exec/runner.js';
import { NO_IPVS_MESSAGE } from './ipvs-types.js';

/** The file the ip_vs module registers in /proc/net. */
export const IPVS_PROC_FILE = '/proc/net/ip_vs';

export interface IpvsProbeDeps {
  readonly runner: Pick<Runner, 'run'>;
  /** Whether a path exists (default node:fs existsSync); a seam for tests. */
  readonly exists?: (path: string) => boolean;
}

export type IpvsProbeResult =
  /** `loaded`: modprobe ip_vs made it appear (it was not there before). */
  | { readonly available: true; readonly loaded: boolean }
  /** `detail`: what was looked at, for the message. */
  | { readonly available: false; readonly detail: string };

/** Whether the kernel has IPVS: /proc/net/ip_vs, else `modprobe ip_vs` and a second look. Never throws. */
export async function probeIpvs(d: IpvsProbeDeps): Promise<IpvsProbeResult> {
  const exists = d.exists ?? existsSync;
  if (exists(IPVS_PROC_FILE)) return { available: true, loaded: false };
  let why: string;
  try {
    const r = await d.runner.run(['modprobe', 'ip_vs'], { allowFailure: true });
    why = r.exitCode === 0 ? 'modprobe ip_vs exited 0' : `modprobe ip_vs exited ${r.exitCode}${r.stderr.trim() ? `: ${r.stderr.trim().split('\n')[0]}` : ''}`;
  } catch (e) {
    why = `modprobe ip_vs could not run: ${(e as Error).message}`;
  }
  if (exists(IPVS_PROC_FILE)) return { available: true, loaded: true };
  return { available: false, detail: `no ${IPVS_PROC_FILE}, and ${why}` };
}

/**
 * Refuses, before anything is made, when the kernel has no IPVS.
 * @param what the command that needs it, e.g. "lab up --proxy-mode ipvs": the message starts with it.
 * @throws NodenetError(NotAvailable) "<what>: this kernel has no IPVS ...; <what was looked at>".
 */
export async function requireIpvs(what: string, d: IpvsProbeDeps): Promise<void> {
  const r = await probeIpvs(d);
  if (!r.available) throw new NodenetError(ErrorCode.NotAvailable, `${what}: ${NO_IPVS_MESSAGE}; ${r.detail}`);
}
