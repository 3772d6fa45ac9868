/**
 * bench/programming/args: the bench's command line, parsed and validated. Pure.
 *
 *   --modes iptables,nftables   proxy modes, one lab each; `iptables-legacy` puts the legacy
 *                               backend first on the agent's PATH (`iptables` is whatever
 *                               `iptables -V` says: nf_tables here)
 *   --services 10000            Services loaded for the big case (quick: 1000), 2 endpoints each
 *   --small 100                 Services of the contrast case (a lab of its own; 0 skips it)
 *   --changes 50                one-endpoint changes timed per case (quick: 20)
 *   --min-sync-ms 100           the agent's proxyMinSyncMs
 *   --load-concurrency 16       clients creating the Services and EndpointSlices
 *   --timeout-s 900             the longest the bench waits for a fresh agent's full sync
 *   --quick                     smaller sizes (about a minute a mode); any flag above overrides them
 *   --out FILE                  also write the results as JSON to FILE
 *   --cpu-prof DIR              profile the big case's agent (node --cpu-prof, a .cpuprofile per mode under DIR)
 *   --keep-logs DIR             copy each case's agent and control-plane logs to DIR/<mode>-<N>/ before its lab goes
 */
import { FlagError } from '../../agent/src/cli/flags.js';
import { benchFlags, int, list } from '../lib/args.js';
import { mode, type BenchMode } from '../lib/proxy-modes.js';
import { MAX_SERVICES } from '../lib/services.js';

/** bench:proxy's modes but IPVS: this bench runs its agents in namespaces on this kernel, which has none. */
function programmingMode(m: string): BenchMode {
  if (m === 'ipvs') throw new FlagError('--modes: unknown mode "ipvs" for bench:programming (its agents run in namespaces on this kernel; bench:proxy and nodenet bench lookup measure IPVS in a VM)');
  return mode('modes', m);
}

export interface BenchArgs {
  readonly modes: readonly BenchMode[];
  readonly services: number;
  /** 0: no contrast case. */
  readonly small: number;
  readonly changes: number;
  readonly minSyncMs: number;
  readonly loadConcurrency: number;
  readonly timeoutS: number;
  readonly quick: boolean;
  readonly out: string | null;
  readonly cpuProf: string | null;
  readonly keepLogs: string | null;
}

export const USAGE = 'usage: npm run bench:programming -- [--quick] [--modes iptables,nftables] [--services N] [--small N] [--changes K] ' +
  '[--min-sync-ms MS] [--load-concurrency N] [--timeout-s S] [--out FILE] [--cpu-prof DIR] [--keep-logs DIR]';

const FULL = { services: 10_000, changes: 50 };
const QUICK = { services: 1000, changes: 20 };
const STRING_FLAGS = ['modes', 'services', 'small', 'changes', 'min-sync-ms', 'load-concurrency', 'timeout-s', 'out', 'cpu-prof', 'keep-logs'];

/** Parses argv (without node and the script). @throws FlagError naming the flag */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const { flags: f, quick } = benchFlags(argv, STRING_FLAGS, USAGE);
  const d = quick ? QUICK : FULL;
  const get = (k: string, dflt: number): string => f.get(k) ?? String(dflt);
  const services = int('services', get('services', d.services), 1, MAX_SERVICES);
  const small = int('small', get('small', 100), 0, MAX_SERVICES);
  const changes = int('changes', get('changes', d.changes), 1, 1000);
  if (small >= services) throw new FlagError(`--small ${small} must be below --services ${services} (0 skips the contrast case)`);
  for (const [flag, n] of [['services', services], ['small', small]] as const) {
    if (n > 0 && changes > n) throw new FlagError(`--changes ${changes} exceeds the ${n} Services of --${flag} (each change goes to a different Service)`);
  }
  const out = f.get('out') ?? null;
  if (out === '') throw new FlagError('--out needs a file name');
  const dir = (flag: string): string | null => {
    const v = f.get(flag) ?? null;
    if (v === '') throw new FlagError(`--${flag} needs a directory`);
    return v;
  };
  return {
    modes: list('modes', f.get('modes') ?? 'iptables,nftables').map((m) => programmingMode(m)),
    services,
    small,
    changes,
    minSyncMs: int('min-sync-ms', get('min-sync-ms', 100), 0, 10_000),
    loadConcurrency: int('load-concurrency', get('load-concurrency', 16), 1, 256),
    timeoutS: int('timeout-s', get('timeout-s', 900), 10, 24 * 3600),
    quick,
    out,
    cpuProf: dir('cpu-prof'),
    keepLogs: dir('keep-logs'),
  };
}
