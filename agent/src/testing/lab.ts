/**
 * testing/lab: what root tests and benchmarks use to build labs on real
 * dependencies (product code gets them from node/compose.ts).
 */
import { SpawnRunner, type RunResult } from '../exec/runner.js';
import { Lab, uniqueTag } from '../lab/lab.js';

export const runner = new SpawnRunner();

export async function sh(argv: readonly string[], input?: string): Promise<RunResult> {
  return runner.run(argv, input === undefined ? {} : { input });
}

/** Like sh, but a non-zero exit is returned, not thrown. */
export async function shOk(argv: readonly string[], input?: string): Promise<RunResult> {
  return runner.run(argv, input === undefined ? { allowFailure: true } : { allowFailure: true, input });
}

/** A new lab tagged `<prefix><unique>`, on the real runner. */
export function newLab(prefix: string): Promise<Lab> {
  return Lab.create(uniqueTag(prefix), { runner });
}

/**
 * Control-plane flags for a test lab whose cases are not about cluster DNS: no coredns addon, so no two
 * `nodenet dns` replicas per lab (test/dns-suite.ts and the demo keep it).
 */
export const NO_DNS: readonly string[] = ['--disable', 'coredns'];
