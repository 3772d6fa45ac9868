/**
 * `nodenet proxy status | cleanup`: what a node's proxy applied, and removing
 * its rules.
 *
 * status asks the running agent (GET /status on its metrics address: --agent
 * URL, --metrics-bind-address, the one in --config's agent config, or the
 * default 127.0.0.1:10249). Only when no agent answers there does it read
 * `<runDir>/proxy-status.json`, which the agent rewrites after every sync and
 * every manifest scan, and says so on stderr. Either way the kernel stays the
 * source of truth (`nodenet trace` reads the live rules). The agent runs in
 * its node's network namespace, so in a lab run this there (`ip netns exec`).
 * cleanup is kube-proxy's --cleanup:
 * it removes every mode's rules of one prefix from a namespace (iptables
 * mode's chains, nftables mode's table, IPVS mode's virtual servers,
 * ipsets, chains and kube-ipvs0), for a node that stops running the proxy
 * or switches modes by hand. The agent itself removes the other modes'
 * rules when it starts.
 */
import { readFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { stringify as toYaml } from 'yaml';
import { DEFAULTS, parseAgentConfig, splitBindAddress, type AgentConfig } from '../config/config.js';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { readJsonText } from '../../../lib/json/read.js';
import { toNetnsPath } from '../netns/netns.js';
import { proxyStatusFile, readProxyStatus, type ProxyStatus } from '../node/proxy-status.js';
import { CommandError } from './errors.js';
import { FlagError, OUTPUT_FLAGS, outputFormat, parseFlags, type FlagSpecs } from './flags.js';
import { netnsFlag, prefixFlag } from './node-flags.js';
import { formatTable } from './table.js';

export interface ProxyCmdDeps {
  /** Removes one mode's rules from a namespace; true when there were any (compose's removeProxyRules). */
  readonly removeRules: (o: { netns?: string; prefix: string }, mode: CleanupMode) => Promise<boolean>;
  readonly stdout: (s: string) => void;
  /** Notes that are not the output (falling back to the status file); dropped when absent. */
  readonly stderr?: (s: string) => void;
  /** Throws unless a network namespace file exists at path. */
  readonly checkNetns?: (path: string) => void;
  /** GET over HTTP; rejects when nothing answers within timeoutMs (default: node:http). */
  readonly httpGet?: (url: string, timeoutMs: number) => Promise<{ readonly status: number; readonly body: string }>;
}

/** The modes cleanup removes, in this order (the agent's own order when it removes the other modes' rules). */
export const CLEANUP_MODES = ['iptables', 'nftables', 'ipvs'] as const;
export type CleanupMode = (typeof CLEANUP_MODES)[number];

/** How long status waits for the agent before falling back to the file. */
const AGENT_TIMEOUT_MS = 3000;

export const PROXY_USAGE = `usage: nodenet proxy status [--agent URL | --metrics-bind-address IP:PORT] [--config FILE] [--run-dir D] [-o json|yaml]
       nodenet proxy cleanup [--netns NAME|PATH] [--prefix KUBE]
status: what the node's proxy applied (Services and endpoints, last sync, rejected objects), asked of the
  running agent at --agent (http://IP:PORT), --metrics-bind-address, the agent config's (--config) or
  127.0.0.1:10249; when none answers, read from <run-dir>/proxy-status.json (default /run/nodenet).
cleanup: remove every proxy mode's rules from a namespace (kube-proxy --cleanup): iptables mode's chains,
  nftables mode's table, IPVS mode's kube-ipvs0, ipsets, chains and virtual servers (on a kernel without IPVS
  there are no virtual servers; the rest is removed all the same).`;

/** Formats a status file for people: one line per Service port, then the last sync and any problems. */
export function formatProxyStatus(st: ProxyStatus): string {
  const lines: string[] = [];
  const ls = st.lastSync;
  lines.push(`mode ${st.mode}, ${st.ready ? 'ready' : 'not synced yet'}, ${st.syncs} sync${st.syncs === 1 ? '' : 's'}`);
  if (ls) {
    lines.push(
      `last sync: ${ls.ok ? 'ok' : `FAILED (${ls.error})`}, ${ls.scope} (${ls.reason}), ${ls.durationMs} ms, ${ls.servicePorts} service ports, ${ls.endpoints} endpoints` +
        (ls.ruleCount !== null ? `, ${ls.ruleCount} rules written` : ''),
    );
  }
  const names = Object.keys(st.applied).sort();
  if (names.length) {
    const rows = names.map((n) => {
      const eps = st.applied[n] ?? [];
      return [n, eps.length ? eps.join(', ') : '<none: refused>'];
    });
    lines.push('', formatTable(['SERVICE PORT', 'ENDPOINTS'], rows).trimEnd());
  }
  if (st.rejected.length) {
    lines.push('', 'rejected objects:');
    for (const r of st.rejected) {
      // A status file of an older agent has no servedFromLastGood: it withdrew the rules of every rejected object.
      const rv = r.lastGoodResourceVersion !== undefined ? `, resourceVersion ${r.lastGoodResourceVersion},` : '';
      const served = r.servedFromLastGood === true ? `its last valid version${rv} is still served` : 'no rules until fixed';
      // The agent's messages start with the field already (InvalidObjectError's).
      const what = r.message.startsWith(`${r.field}: `) ? r.message : `${r.field}: ${r.message}`;
      lines.push(`  ${r.kind} ${r.key}: ${what} (${served})`);
    }
  }
  if (st.ignored.length) {
    lines.push('', 'ignored objects:');
    for (const r of st.ignored) lines.push(`  ${r.kind} ${r.key}: ${r.reason}`);
  }
  const bad = Object.entries(st.manifestErrors);
  if (bad.length) {
    lines.push('', 'unreadable manifest files (their previous objects are kept):');
    for (const [f, msg] of bad) lines.push(`  ${f}: ${msg}`);
  }
  return `${lines.join('\n')}\n`;
}

const SPECS: Readonly<Record<string, FlagSpecs>> = {
  status: { 'run-dir': { type: 'string' }, agent: { type: 'string' }, 'metrics-bind-address': { type: 'string' }, config: { type: 'string' }, ...OUTPUT_FLAGS },
  cleanup: { netns: { type: 'string' }, prefix: { type: 'string' } },
};

export async function proxyCommand(argv: readonly string[], deps: ProxyCmdDeps): Promise<number> {
  const out = deps.stdout;
  const [sub, ...tail] = argv;
  if (sub === undefined || sub === '-h' || sub === '--help') {
    out(`${PROXY_USAGE}\n`);
    return sub === undefined ? 2 : 0;
  }
  const spec = SPECS[sub];
  if (!spec) throw new FlagError(`unknown proxy subcommand ${JSON.stringify(sub)}\n${PROXY_USAGE}`);
  const p = parseFlags(tail, spec);
  if (p.help) {
    out(`${PROXY_USAGE}\n`);
    return 0;
  }
  const extra = [...p.positional, ...p.rest];
  if (extra.length) throw new FlagError(`unexpected argument ${JSON.stringify(extra[0])}`);
  if (sub === 'status') {
    const fmt = outputFormat(p, ['table', 'json', 'yaml'] as const, 'table');
    const st = await proxyStatus(p.flags, deps);
    out(fmt === 'json' ? `${JSON.stringify(st, null, 2)}\n` : fmt === 'yaml' ? toYaml(st) : formatProxyStatus(st));
    return 0;
  }
  const ns = netnsFlag(p, deps.checkNetns ?? ((path: string) => void toNetnsPath(path)));
  const netns = ns?.path;
  const prefix = prefixFlag(p);
  const where = ns?.name ?? 'this network namespace';
  for (const mode of CLEANUP_MODES) {
    const removed = await deps.removeRules({ prefix, ...(netns ? { netns } : {}) }, mode);
    out(`${mode}: ${removed ? 'rules removed' : 'nothing to remove'} (${where}, prefix ${prefix})\n`);
  }
  return 0;
}

/** The agent config --config names, or null. */
function agentConfigFile(file: string | undefined): AgentConfig | null {
  if (file === undefined) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new NodenetError(ErrorCode.InvalidConfig, `cannot read config ${file}: ${(e as Error).message}`, { cause: e });
  }
  return parseAgentConfig(raw);
}

/**
 * The /status URL to ask, from --agent, --metrics-bind-address or the
 * config; null when the metrics listener is off. A wildcard bind address is
 * asked on loopback. @throws FlagError
 */
export function statusUrl(flags: ReadonlyMap<string, string>, cfg: AgentConfig | null): string | null {
  const agent = flags.get('agent');
  const bindFlag = flags.get('metrics-bind-address');
  if (agent !== undefined && bindFlag !== undefined) throw new FlagError('--agent and --metrics-bind-address both say where the agent is: give one');
  if (agent !== undefined) {
    let u: URL;
    try {
      u = new URL(agent);
    } catch {
      throw new FlagError(`--agent ${JSON.stringify(agent)}: expected a URL such as http://127.0.0.1:10249`);
    }
    if (u.protocol !== 'http:') throw new FlagError(`--agent ${JSON.stringify(agent)}: the agent speaks http only`);
    if (u.pathname === '/' || u.pathname === '') u.pathname = '/status';
    return u.toString();
  }
  const bind = bindFlag ?? (cfg ? cfg.metricsBindAddress : DEFAULTS.metricsBindAddress);
  if (bind === null || bind === '' || bind === '0') return null;
  const hp = splitBindAddress(bind);
  if (!hp || hp.port === 0) throw new FlagError(`--metrics-bind-address ${JSON.stringify(bind)}: expected the agent's IP:PORT, e.g. 127.0.0.1:10249`);
  const host = hp.host === '0.0.0.0' ? '127.0.0.1' : hp.host === '::' ? '::1' : hp.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${hp.port}/status`;
}

async function proxyStatus(flags: ReadonlyMap<string, string>, deps: ProxyCmdDeps): Promise<ProxyStatus> {
  const cfg = agentConfigFile(flags.get('config'));
  const url = statusUrl(flags, cfg);
  const file = proxyStatusFile(flags.get('run-dir') ?? cfg?.runDir ?? '/run/nodenet');
  let why = 'the agent serves no metrics address (metricsBindAddress off)';
  if (url !== null) {
    const answer = await (deps.httpGet ?? getText)(url, AGENT_TIMEOUT_MS).catch((e: unknown) => {
      why = `no agent answered at ${url} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
      return null;
    });
    if (answer) return statusFromAgent(url, answer);
  }
  const st = readProxyStatus(file);
  if (!st) throw new CommandError(`no ${file}: is the agent running with a proxy mode (and this --run-dir)? (${why})`);
  deps.stderr?.(`note: ${why}; showing ${file}, which the agent wrote after its last sync\n`);
  return st;
}

/** The agent's answer as a status, or a CommandError saying what it answered instead. */
function statusFromAgent(url: string, r: { readonly status: number; readonly body: string }): ProxyStatus {
  if (r.status !== 200) {
    let msg = r.body.trim();
    try {
      const e = (JSON.parse(r.body) as { error?: unknown }).error;
      if (typeof e === 'string') msg = e;
    } catch {
      // not JSON: the body as is
    }
    throw new CommandError(`the agent at ${url} answered ${r.status}: ${msg}`);
  }
  try {
    return readJsonText(url, r.body, (o) => {
      // The fields the output relies on, as readProxyStatus checks them in the file.
      o.string('mode');
      o.int('syncs', { min: 0 });
      o.bool('ready');
      o.object('applied');
      return o.obj as unknown as ProxyStatus;
    });
  } catch (e) {
    throw new CommandError(`the agent at ${url} answered something that is not a proxy status: ${(e as Error).message}`);
  }
}

/** GET url with node:http: the status and body; rejects on a connection error or after timeoutMs. */
function getText(url: string, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpGet(url, { timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error(`no answer in ${timeoutMs} ms`), { code: 'ETIMEDOUT' })));
    req.on('error', reject);
  });
}
