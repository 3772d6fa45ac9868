/**
 * bench/dns/args: bench:dns's command line, parsed and validated. Pure.
 *
 *   --services 10000        Services (each an A record) in the API and in dnsmasq's hosts file (smoke: 1,000)
 *   --namespaces 100        they are spread over (smoke: 10)
 *   --duration 10           seconds of one dnsperf run, per case per server (dnsperf -l; smoke: 2)
 *   --clients 10            dnsperf -c: simulated clients (source ports)
 *   --outstanding 100       dnsperf -q: queries in flight at most (dnsperf's default)
 *   --freshness 10          samples of each change (a Service created, one deleted) per server (smoke: 3)
 *   --servers nodenet,dnsmasq  which servers to measure
 *   --smoke                 the smaller figures above; any flag overrides them
 *   --out-dir DIR           where dns-<date>.{json,svg,png} go (default bench/results)
 */
import { FlagError, parseFlags } from '../../agent/src/cli/flags.js';
import { int, list } from '../lib/args.js';

export const SERVERS = ['nodenet', 'dnsmasq'] as const;
export type ServerName = (typeof SERVERS)[number];

export interface DnsBenchArgs {
  readonly services: number;
  readonly namespaces: number;
  readonly durationS: number;
  readonly clients: number;
  readonly outstanding: number;
  readonly freshness: number;
  readonly servers: readonly ServerName[];
  readonly smoke: boolean;
  readonly outDir: string;
}

export const USAGE = 'usage: npm run bench:dns -- [--smoke] [--services N] [--namespaces N] [--duration S] [--clients N] [--outstanding N] ' +
  `[--freshness N] [--servers ${SERVERS.join(',')}] [--out-dir DIR]`;

const FULL = { services: 10_000, namespaces: 100, duration: 10, freshness: 10 };
const SMOKE = { services: 1_000, namespaces: 10, duration: 2, freshness: 3 };
const STRING_FLAGS = ['services', 'namespaces', 'duration', 'clients', 'outstanding', 'freshness', 'servers', 'out-dir'];

/** Parses argv (without node and the script). @throws FlagError naming the flag (or the usage, for -h) */
export function parseDnsBenchArgs(argv: readonly string[]): DnsBenchArgs {
  const p = parseFlags(argv, { smoke: { type: 'boolean' }, ...Object.fromEntries(STRING_FLAGS.map((f) => [f, { type: 'string' } as const])) });
  if (p.positional.length || p.rest.length) throw new FlagError(`unexpected argument ${JSON.stringify(p.positional[0] ?? p.rest[0])}`);
  if (p.help) throw new FlagError(USAGE);
  const f = p.flags;
  const smoke = f.has('smoke');
  const d = smoke ? SMOKE : FULL;
  const get = (k: string, dflt: number): string => f.get(k) ?? String(dflt);
  const servers = list('servers', f.get('servers') ?? SERVERS.join(',')).map((s) => {
    if (!(SERVERS as readonly string[]).includes(s)) throw new FlagError(`--servers: unknown server ${JSON.stringify(s)} (one of ${SERVERS.join(', ')})`);
    return s as ServerName;
  });
  const outDir = f.get('out-dir') ?? 'bench/results';
  if (outDir === '') throw new FlagError('--out-dir needs a directory');
  const services = int('services', get('services', d.services), 1, 50_000);
  const namespaces = int('namespaces', get('namespaces', d.namespaces), 1, 1_000);
  if (namespaces > services) throw new FlagError(`--namespaces ${namespaces} is more than --services ${services}`);
  return {
    services,
    namespaces,
    durationS: int('duration', get('duration', d.duration), 1, 600),
    clients: int('clients', get('clients', 10), 1, 1_000),
    outstanding: int('outstanding', get('outstanding', 100), 1, 65_535),
    freshness: int('freshness', get('freshness', d.freshness), 0, 1_000),
    // The bench's order whatever the flag's: nodenet first in every table.
    servers: SERVERS.filter((s) => servers.includes(s)),
    smoke,
    outDir,
  };
}
