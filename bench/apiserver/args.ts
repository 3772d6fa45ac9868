/**
 * bench/apiserver/args: the bench's command line, parsed and validated. Pure.
 *
 *   --quick                 smaller sizes (a run of well under a minute); any flag below overrides them
 *   --services 10000        Services loaded for the list figure (quick: 1000)
 *   --slices 20000          EndpointSlices loaded for the list figure (quick: 2000)
 *   --creates 2000          creates timed per concurrency level (quick: 300)
 *   --concurrency 1,16      closed-loop clients for the create figure
 *   --paced 5000            creates at a fixed rate, open loop, as vcluster's load test ran (quick: 600; 0: skip)
 *   --slope 30000           the Services the store is topped up to for the last point of the slope (quick: 3000; 0: skip):
 *                           the closed-loop creates run with 0, --services and this many Services in the store
 *   --qps 200               the fixed rate of --paced
 *   --watchers 10,100       concurrent watchers per watch case
 *   --watch-writes 300      writes timed per watch case (quick: 100)
 *   --list-repeat 5         full lists timed per kind (quick: 3)
 *   --load-concurrency 16   clients loading the Services and EndpointSlices
 *   --log-level info        the server's log level (`nodenet control-plane`'s default: one line per request, to a file)
 *   --storage sqlite        the server's store: sqlite, etcd, or both (sqlite,etcd: one run after the other, side by side).
 *                           The default stays SQLite alone, the embedded default whose figures the README and earlier
 *                           results hold, and a run that needs no etcd installed
 *   --etcd-members 3        etcd members (an odd number, 1 to 7), on loopback, data under /tmp
 *   --floor-writes 2000     requests per case of etcd alone, the floor measured in the same run (quick: 300)
 *   --failover N            with etcd: N rounds of each failover on an HA lab (3 members, 2 API servers, HAProxy;
 *                           needs root), its figures in the comparison (default 0: none)
 *   --out FILE              also write the results as JSON to FILE
 */
import { FlagError } from '../../agent/src/cli/flags.js';
import { benchFlags, int, ints, list } from '../lib/args.js';

export interface BenchArgs {
  readonly quick: boolean;
  readonly services: number;
  readonly slices: number;
  readonly creates: number;
  readonly concurrency: readonly number[];
  readonly paced: number;
  /** The slope's last point: Services in the store (0: no such point). */
  readonly slope: number;
  readonly qps: number;
  readonly watchers: readonly number[];
  readonly watchWrites: number;
  readonly listRepeat: number;
  readonly loadConcurrency: number;
  readonly logLevel: string;
  /** In the order run. */
  readonly storage: readonly StorageKind[];
  readonly etcdMembers: number;
  readonly floorWrites: number;
  /** Rounds of the failover figures (0: none). */
  readonly failover: number;
  readonly out: string | null;
}

export type StorageKind = 'sqlite' | 'etcd';

export const USAGE = 'usage: npm run bench:apiserver -- [--quick] [--services N] [--slices N] [--creates N] [--concurrency 1,16] [--paced N] [--slope N] [--qps Q] ' +
  '[--watchers 10,100] [--watch-writes N] [--list-repeat N] [--load-concurrency N] [--log-level L] [--storage sqlite|etcd|sqlite,etcd] [--etcd-members N] ' +
  '[--floor-writes N] [--failover N] [--out FILE]';

const FULL = { services: 10_000, slices: 20_000, creates: 2000, paced: 5000, slope: 30_000, watchWrites: 300, listRepeat: 5, floorWrites: 2000 };
const QUICK = { services: 1000, slices: 2000, creates: 300, paced: 600, slope: 3000, watchWrites: 100, listRepeat: 3, floorWrites: 300 };

/** Names the bench gives objects are 5-digit zero-padded (workload.ts). */
export const MAX_OBJECTS = 60_000;
/** The server allows 200 watches per user; the sentinel write needs none of them. */
export const MAX_WATCHERS = 200;
const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

const STRING_FLAGS = ['services', 'slices', 'creates', 'concurrency', 'paced', 'slope', 'qps', 'watchers', 'watch-writes', 'list-repeat', 'load-concurrency', 'log-level', 'storage', 'etcd-members', 'floor-writes', 'failover', 'out'];

function failoverRounds(f: ReadonlyMap<string, string>, storage: readonly StorageKind[]): number {
  const n = int('failover', f.get('failover') ?? '0', 0, 20);
  if (n > 0 && !storage.includes('etcd')) throw new FlagError('--failover: the failover figures are the HA control plane\'s, on etcd (--storage etcd or sqlite,etcd)');
  return n;
}

/** Parses argv (without node and the script). @throws FlagError naming the flag */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const { flags: f, quick } = benchFlags(argv, STRING_FLAGS, USAGE);
  const d = quick ? QUICK : FULL;
  const get = (k: string, dflt: number | string): string => f.get(k) ?? String(dflt);
  const logLevel = get('log-level', 'info');
  if (!LEVELS.includes(logLevel)) throw new FlagError(`--log-level: ${JSON.stringify(logLevel)} is not one of ${LEVELS.join(', ')}`);
  const out = f.get('out') ?? null;
  if (out === '') throw new FlagError('--out needs a file name');
  const services = int('services', get('services', d.services), 1, MAX_OBJECTS);
  const slices = int('slices', get('slices', d.slices), 0, MAX_OBJECTS);
  const slope = int('slope', get('slope', d.slope), 0, MAX_OBJECTS);
  if (slope !== 0 && slope <= services) throw new FlagError(`--slope: ${slope} must be above --services (${services}), or 0 to skip the slope's last point`);
  const storage = list('storage', get('storage', 'sqlite')).map((k) => {
    if (k !== 'sqlite' && k !== 'etcd') throw new FlagError(`--storage: ${JSON.stringify(k)} is not sqlite or etcd`);
    return k;
  });
  const etcdMembers = int('etcd-members', get('etcd-members', 3), 1, 7);
  if (etcdMembers % 2 === 0) throw new FlagError(`--etcd-members: ${etcdMembers} is even; etcd wants an odd number (a quorum of ${etcdMembers / 2 + 1} of ${etcdMembers} survives no more failures than ${etcdMembers - 1} members)`);
  if (f.has('etcd-members') && !storage.includes('etcd')) throw new FlagError('--etcd-members: only with --storage etcd (or sqlite,etcd)');
  return {
    quick,
    services,
    slices,
    creates: int('creates', get('creates', d.creates), 1, MAX_OBJECTS),
    concurrency: ints('concurrency', get('concurrency', '1,16'), 1, 256),
    paced: int('paced', get('paced', d.paced), 0, MAX_OBJECTS),
    slope,
    qps: int('qps', get('qps', 200), 1, 5000),
    watchers: ints('watchers', get('watchers', '10,100'), 1, MAX_WATCHERS),
    watchWrites: int('watch-writes', get('watch-writes', d.watchWrites), 1, 10_000),
    listRepeat: int('list-repeat', get('list-repeat', d.listRepeat), 1, 100),
    loadConcurrency: int('load-concurrency', get('load-concurrency', 16), 1, 256),
    logLevel,
    storage,
    etcdMembers,
    floorWrites: int('floor-writes', get('floor-writes', d.floorWrites), 1, 100_000),
    failover: failoverRounds(f, storage),
    out,
  };
}
