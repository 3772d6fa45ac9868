/**
 * bench/proxy-sync/args: the bench's command line, parsed and validated. Pure.
 *
 *   --sizes 1000,10000,30000   Services per case
 *   --modes iptables,nftables  proxy modes; `iptables-legacy` forces the legacy backend
 *                              (`iptables` uses whatever `iptables -V` reports); `nftables-sharded`
 *                              is nftables in the sharded layout (8 shard tables, nftablesShards); `ipvs` needs
 *                              the kernel's IPVS: without it, the cases run in a qemu VM (test-vm suite proxy-sync)
 *   --repeat 3                 one-endpoint changes per case (median and max reported)
 *   --cap-s 600                wall-clock cap per case; a sync still running is killed
 *   --no-restart               skip the second full sync (a new Proxier over the existing rules)
 *   --out FILE                 also write the results as JSON to FILE
 *   --case MODE:SIZE --netns NAME   internal: run one case in this process (the parent spawns these)
 */
import { FlagError, parseFlags } from '../../agent/src/cli/flags.js';
import { int, list } from '../lib/args.js';
import { mode, type BenchMode } from '../lib/proxy-modes.js';
import { MAX_SERVICES } from '../lib/services.js';

export interface CaseSpec {
  readonly mode: BenchMode;
  readonly services: number;
  /** The scratch namespace's name: nn-bps-<pid>-<mode>-<size>. */
  readonly netns: string;
}

export interface BenchArgs {
  readonly sizes: readonly number[];
  readonly modes: readonly BenchMode[];
  readonly repeat: number;
  readonly capS: number;
  readonly restart: boolean;
  readonly out: string | null;
  /** Set in a child process: run only this case. */
  readonly case: CaseSpec | null;
}

const FLAGS = ['sizes', 'modes', 'repeat', 'cap-s', 'no-restart', 'out', 'case', 'netns'];

export const USAGE = 'usage: npm run bench:proxy -- [--sizes 1000,10000,30000] [--modes iptables,nftables] [--repeat 3] [--cap-s 600] [--no-restart] [--out FILE]';

/** The namespace name of one case: nn-bps-<pid>-<mode>-<size>. */
export function caseNetns(pid: number, m: BenchMode, services: number): string {
  return `nn-bps-${pid}-${m}-${services}`;
}

/** Parses argv (without node and the script); throws FlagError on anything wrong. */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const p = parseFlags(argv, Object.fromEntries(FLAGS.map((f) => [f, { type: f === 'no-restart' ? 'boolean' : 'string' } as const])));
  if (p.positional.length || p.rest.length) throw new FlagError(`unexpected argument ${JSON.stringify(p.positional[0] ?? p.rest[0])}`);
  if (p.help) throw new FlagError(USAGE);
  const f = p.flags;
  const sizes = list('sizes', f.get('sizes') ?? '1000,10000,30000').map((s) => int('sizes', s, 1, MAX_SERVICES));
  const modes = list('modes', f.get('modes') ?? 'iptables,nftables').map((s) => mode('modes', s));
  const repeat = int('repeat', f.get('repeat') ?? '3', 1, 1000);
  const capS = int('cap-s', f.get('cap-s') ?? '600', 10, 24 * 3600);
  const out = f.get('out') ?? null;
  if (out === '') throw new FlagError('--out needs a file name');
  let one: CaseSpec | null = null;
  const c = f.get('case');
  if (c !== undefined) {
    const m = /^([a-z-]+):(\d+)$/.exec(c);
    if (!m) throw new FlagError(`--case: expected MODE:SIZE, got ${JSON.stringify(c)}`);
    const netns = f.get('netns');
    if (netns === undefined || !/^nn-bps-[A-Za-z0-9-]+$/.test(netns)) throw new FlagError('--case needs --netns nn-bps-...');
    one = { mode: mode('case', m[1]!), services: int('case', m[2]!, 1, MAX_SERVICES), netns };
  } else if (f.has('netns')) throw new FlagError('--netns is only valid with --case');
  if (one && repeat > one.services) throw new FlagError(`--repeat ${repeat} exceeds the ${one.services} Services`);
  for (const s of sizes) if (!one && repeat > s) throw new FlagError(`--repeat ${repeat} exceeds the ${s} Services of one size`);
  return { sizes, modes, repeat, capS, restart: !f.has('no-restart'), out, case: one };
}
