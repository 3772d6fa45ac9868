/**
 * trace/live: reads a node's live Service rules for `nodenet trace`.
 *
 * What it reads, inside the node's network namespace (commands run under the
 * Runner's netns option; nothing is written):
 *   - nftables mode: `nft list table ip <table>` (the text listing: the
 *     tracer reads rules as text; `nft -j` carries no rule text), parsed with
 *     nft-listing.ts;
 *   - iptables mode: `iptables -V` says which backend the user's iptables
 *     drives (the one the agent writes to), then that backend's whole
 *     `iptables-*-save` (one spawn; `-t nat` on the legacy backend would load
 *     and create the table as a side effect). When our SERVICES chain is not
 *     there, the other backend is looked at too. Only the nat and filter
 *     tables are kept: the tracer walks those;
 *   - IPVS mode: the same iptables dump (told from iptables mode by our
 *     IPVS-FILTER chain in filter, declared whether the filter is on or
 *     off), then `ipset save` (our sets only), `ipvsadm -Ln` and
 *     `ip -j addr show dev kube-ipvs0`;
 *
 * iptables-parse.ts knows the matches nodenet writes, not every module a
 * foreign ruleset may use (physdev, set, ...). A foreign rule it cannot parse
 * is left out of the trace and reported (`skipped`), rather than making the
 * whole trace fail on a node that also runs Docker.
 */
import type { Runner, RunResult } from '../exec/runner.js';
import { silentLogger } from '../../../lib/log/log.js';
import { BACKEND_COMMANDS, detectBackend } from '../netfilter/iptables/iptables.js';
import { chainNamesFromSave, parseRuleArgs, parseSave, tokenize, type IptDump } from '../netfilter/iptables/iptables-parse.js';
import type { IptablesBackendKind } from '../netfilter/iptables/iptables-types.js';
import { NftExecutor } from '../netfilter/nft/nft.js';
import { parseNftListing } from '../netfilter/nft/nft-listing.js';
import type { NftTableState } from '../netfilter/nft/nft-state.js';
import { fixedChains } from '../proxy/iptables/chains.js';
import { MAX_SHARDS, shardTableName, tableName } from '../proxy/nftables/names.js';
import { parseIpsetSave, type IpsetState } from '../netfilter/iptables/ipset-parse.js';
import { parseIpvsadmList } from '../netfilter/ipvs/ipvsadm-parse.js';
import type { VirtualServerState } from '../netfilter/ipvs/ipvs-types.js';
import { DUMMY_DEVICE, ipvsNames, isOurSet } from '../proxy/ipvs/names.js';

export type TraceMode = 'iptables' | 'nftables' | 'ipvs';

export interface LiveDeps {
  readonly runner: Runner;
  /** The namespace to read (a path); the process's own when absent. */
  readonly netns?: string;
}

export interface IptablesLive {
  readonly mode: 'iptables';
  readonly backend: IptablesBackendKind;
  readonly dump: IptDump;
  /** Foreign `-A` lines the parser does not understand, left out of the trace. */
  readonly skipped: readonly string[];
}

export interface NftablesLive {
  readonly mode: 'nftables';
  /** "ip kube-proxy", with its shard tables when sharded ("ip kube-proxy + 8 shard tables") */
  readonly table: string;
  /** The main table, then the shard tables (the sharded layout: AgentConfig.nftablesShards). */
  readonly state: readonly NftTableState[];
}

export interface IpvsLive {
  readonly mode: 'ipvs';
  readonly backend: IptablesBackendKind;
  readonly dump: IptDump;
  readonly skipped: readonly string[];
  /** Our sets (`ipset save`), by name. */
  readonly ipsets: ReadonlyMap<string, IpsetState>;
  /** `ipvsadm -Ln`. */
  readonly services: readonly VirtualServerState[];
  /** The addresses on kube-ipvs0 (`ip -j addr show dev kube-ipvs0`), empty when the device is missing. */
  readonly vips: readonly string[];
}

export type LiveRules = IptablesLive | NftablesLive | IpvsLive;

/** The rules could not be read, or nodenet's rules are not there: `nodenet trace` exits 1. */
export class TraceReadError extends Error {
  override name = 'TraceReadError';
}

/** The question cannot be answered as asked (both modes present, icmp in iptables mode): a usage error, exit 2. */
export class TraceUsageError extends Error {
  override name = 'TraceUsageError';
}

type Probe<T> = { readonly found: T } | { readonly missing: string };

function runOpts(deps: LiveDeps, allowFailure: boolean): { netns?: string; allowFailure: boolean } {
  return deps.netns === undefined ? { allowFailure } : { netns: deps.netns, allowFailure };
}

const errText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** The `*nat` and `*filter` blocks of iptables-save output (other tables dropped). Pure. */
export function keepTables(save: string, keep: readonly string[] = ['nat', 'filter']): string {
  const out: string[] = [];
  let on = false;
  for (const line of save.split('\n')) {
    const l = line.trim();
    if (l.startsWith('*')) on = keep.includes(l.slice(1).trim());
    if (on) out.push(line);
    if (l === 'COMMIT') on = false;
  }
  return out.length ? `${out.join('\n')}\n` : '';
}

/** Drops the `-A` lines iptables-parse cannot read; returns the rest and the dropped lines. Pure. */
export function dropUnparseable(save: string): { text: string; skipped: string[] } {
  const kept: string[] = [];
  const skipped: string[] = [];
  for (const line of save.split('\n')) {
    const l = line.trim();
    if (l.startsWith('-A ')) {
      try {
        let toks = tokenize(l);
        if (toks[0] && /^\[\d+:\d+\]$/.test(toks[0])) toks = toks.slice(1);
        parseRuleArgs(toks[1] ?? '', toks.slice(2));
      } catch {
        skipped.push(l);
        continue;
      }
    }
    kept.push(line);
  }
  return { text: kept.join('\n'), skipped };
}

async function probeNftables(deps: LiveDeps, prefix: string): Promise<Probe<NftablesLive>> {
  const name = tableName(prefix);
  let text: string | null;
  try {
    text = await new NftExecutor(deps).listTableText('ip', name);
  } catch (e) {
    return { missing: `cannot read nftables (\`nft list table ip ${name}\`): ${errText(e)}` };
  }
  if (text === null) return { missing: `no nftables table ip ${name}` };
  let tables: NftTableState[];
  try {
    tables = parseNftListing(text);
  } catch (e) {
    throw new TraceReadError(`cannot parse \`nft list table ip ${name}\`: ${errText(e)}`, { cause: e });
  }
  const state = tables.find((t) => t.family === 'ip' && t.name === name);
  if (!state) throw new TraceReadError(`\`nft list table ip ${name}\` printed no table ip ${name}`);
  // The shard tables of the sharded layout, as many as there are (kube-proxy-0, kube-proxy-1, ...).
  const shards: NftTableState[] = [];
  for (let i = 0; i < MAX_SHARDS; i++) {
    const sn = shardTableName(prefix, i);
    let st: string | null;
    try {
      st = await new NftExecutor(deps).listTableText('ip', sn);
    } catch (e) {
      return { missing: `cannot read nftables (\`nft list table ip ${sn}\`): ${errText(e)}` };
    }
    if (st === null) break;
    const found = parseNftListing(st).find((t) => t.family === 'ip' && t.name === sn);
    if (!found) throw new TraceReadError(`\`nft list table ip ${sn}\` printed no table ip ${sn}`);
    shards.push(found);
  }
  return { found: { mode: 'nftables', table: `ip ${name}${shards.length ? ` + ${shards.length} shard tables` : ''}`, state: [state, ...shards] } };
}

async function probeIptables(deps: LiveDeps, prefix: string): Promise<Probe<IptablesLive>> {
  const services = fixedChains(prefix).services;
  let order: IptablesBackendKind[];
  try {
    const b = await detectBackend({ runner: deps.runner, log: silentLogger(), ...(deps.netns === undefined ? {} : { netns: deps.netns }) });
    order = b === 'nft' ? ['nft', 'legacy'] : ['legacy', 'nft'];
  } catch {
    order = ['nft', 'legacy']; // no `iptables` alternative: look at both backends' tools
  }
  const looked: string[] = [];
  for (const backend of order) {
    const cmd = BACKEND_COMMANDS[backend].save;
    let r: RunResult;
    try {
      r = await deps.runner.run([cmd], runOpts(deps, true));
    } catch (e) {
      looked.push(`${cmd}: ${errText(e)}`);
      continue;
    }
    if (r.exitCode !== 0) {
      looked.push(`${cmd} exited ${r.exitCode}${r.stderr.trim() ? `: ${r.stderr.trim().split('\n')[0]}` : ''}`);
      continue;
    }
    const text = keepTables(r.stdout);
    if (!chainNamesFromSave(text, 'nat').has(services)) {
      looked.push(cmd);
      continue;
    }
    const { text: clean, skipped } = dropUnparseable(text);
    let dump: IptDump;
    try {
      dump = parseSave(clean);
    } catch (e) {
      throw new TraceReadError(`cannot parse ${cmd} output: ${errText(e)}`, { cause: e });
    }
    return { found: { mode: 'iptables', backend, dump, skipped } };
  }
  return { missing: `no ${services} chain in the nat table (${looked.join('; ')})` };
}

/**
 * Reads the rules of `mode`, or detects the mode: our nft table present →
 * nftables; our SERVICES chain in nat → iptables.
 * @throws TraceUsageError when both are present under 'auto' (the user must pick).
 * @throws TraceReadError when the rules are not there or cannot be read.
 */
export async function readLiveRules(deps: LiveDeps, mode: 'auto' | TraceMode, prefix: string): Promise<LiveRules> {
  const where = deps.netns === undefined ? 'this network namespace' : deps.netns;
  if (mode === 'nftables') {
    const p = await probeNftables(deps, prefix);
    if ('found' in p) return p.found;
    throw new TraceReadError(`${p.missing} in ${where}`);
  }
  if (mode === 'iptables') {
    const p = await probeIptables(deps, prefix);
    if ('found' in p) return p.found;
    throw new TraceReadError(`${p.missing} in ${where}`);
  }
  if (mode === 'ipvs') {
    const p = await probeIptables(deps, prefix);
    if (!('found' in p)) throw new TraceReadError(`${p.missing} in ${where}`);
    const filter = ipvsFilterChain(prefix);
    if (!isIpvsDump(p.found.dump, prefix)) throw new TraceReadError(`no ${filter ?? 'IPVS-FILTER'} chain in the filter table in ${where}: these are not IPVS mode's rules (try --mode iptables)`);
    return readIpvs(deps, p.found, prefix);
  }
  const [n, i] = await Promise.all([probeNftables(deps, prefix), probeIptables(deps, prefix)]);
  if ('found' in n && 'found' in i) {
    const ipvs = isIpvsDump(i.found.dump, prefix);
    throw new TraceUsageError(
      `both nftables rules (table ${n.found.table}) and ${ipvs ? 'IPVS mode' : 'iptables'} rules (${fixedChains(prefix).services} in nat, ${BACKEND_COMMANDS[i.found.backend].save}) ` +
        `are present in ${where}; say which to trace with --mode nftables or --mode ${ipvs ? 'ipvs' : 'iptables'}`,
    );
  }
  if ('found' in n) return n.found;
  if ('found' in i) return isIpvsDump(i.found.dump, prefix) ? readIpvs(deps, i.found, prefix) : i.found;
  throw new TraceReadError(`no nodenet Service rules in ${where}: ${n.missing}; ${i.missing}`);
}

/** The IPVS-FILTER chain's name for this prefix, or null when the prefix is too long for IPVS mode. */
function ipvsFilterChain(prefix: string): string | null {
  try {
    return ipvsNames(prefix).filter.ipvsFilter;
  } catch {
    return null;
  }
}

/** IPVS mode's rules: our IPVS-FILTER chain is declared in filter (also with --ipvs-filter=false). Pure. */
export function isIpvsDump(dump: IptDump, prefix: string): boolean {
  const c = ipvsFilterChain(prefix);
  return c !== null && dump.tables.get('filter')?.chains.has(c) === true;
}

/** The addresses of `ip -j addr show dev DEV` output (IPv4, without prefix length). Pure. */
export function parseIpAddrJson(text: string): string[] {
  const links = JSON.parse(text) as { addr_info?: { family?: string; local?: string }[] }[];
  const out: string[] = [];
  for (const l of Array.isArray(links) ? links : []) for (const a of l.addr_info ?? []) if (a.family === 'inet' && typeof a.local === 'string') out.push(a.local);
  return out;
}

async function readTool(deps: LiveDeps, argv: readonly string[]): Promise<RunResult> {
  try {
    return await deps.runner.run([...argv], runOpts(deps, true));
  } catch (e) {
    throw new TraceReadError(`cannot run \`${argv.join(' ')}\`: ${errText(e)}`, { cause: e });
  }
}

function toolFailed(argv: readonly string[], r: RunResult): TraceReadError {
  return new TraceReadError(`\`${argv.join(' ')}\` exited ${r.exitCode}${r.stderr.trim() ? `: ${r.stderr.trim().split('\n')[0]}` : ''}`);
}

/** IPVS mode's other state, next to its iptables dump: sets, the IPVS table, kube-ipvs0's addresses. All read-only. */
async function readIpvs(deps: LiveDeps, ipt: IptablesLive, prefix: string): Promise<IpvsLive> {
  const names = ipvsNames(prefix);
  const setArgv = ['ipset', 'save'];
  const vsArgv = ['ipvsadm', '-L', '-n'];
  const addrArgv = ['ip', '-j', 'addr', 'show', 'dev', DUMMY_DEVICE];
  const [sets, table, addrs] = await Promise.all([readTool(deps, setArgv), readTool(deps, vsArgv), readTool(deps, addrArgv)]);
  if (sets.exitCode !== 0) throw toolFailed(setArgv, sets);
  if (table.exitCode !== 0) throw toolFailed(vsArgv, table);
  let ipsets: Map<string, IpsetState>;
  let services: VirtualServerState[];
  let vips: string[];
  try {
    ipsets = parseIpsetSave(sets.stdout, (n) => isOurSet(names, n));
  } catch (e) {
    throw new TraceReadError(`cannot parse \`ipset save\`: ${errText(e)}`, { cause: e });
  }
  try {
    services = parseIpvsadmList(table.stdout);
  } catch (e) {
    throw new TraceReadError(`cannot parse \`ipvsadm -Ln\`: ${errText(e)}`, { cause: e });
  }
  if (addrs.exitCode !== 0) {
    // No kube-ipvs0: no VIP is local (the trace shows it); any other failure is one.
    if (!/does not exist/i.test(addrs.stderr)) throw toolFailed(addrArgv, addrs);
    vips = [];
  } else {
    try {
      vips = parseIpAddrJson(addrs.stdout);
    } catch (e) {
      throw new TraceReadError(`cannot parse \`${addrArgv.join(' ')}\`: ${errText(e)}`, { cause: e });
    }
  }
  return { mode: 'ipvs', backend: ipt.backend, dump: ipt.dump, skipped: ipt.skipped, ipsets, services, vips };
}
