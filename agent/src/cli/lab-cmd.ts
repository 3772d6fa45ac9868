/**
 * `nodenet lab`: labs, virtual clusters out of network namespaces (the demo
 * and the tests make them; a later issue adds `nodenet lab up`).
 *   nodenet lab cleanup    remove what dead labs and crashed tests left
 */
import { FlagError, parseFlags } from './flags.js';

export const LAB_USAGE = `usage: nodenet lab cleanup
cleanup: remove the namespaces, processes, mounts and directories of labs whose owner process is gone
(and nn-* namespaces of crashed tests); a running lab or test is left alone.`;

export async function labCommand(
  argv: readonly string[],
  deps: { readonly cleanupLabs: () => Promise<readonly string[]>; readonly stdout: (s: string) => void },
): Promise<number> {
  const [sub, ...tail] = argv;
  if (sub === undefined || sub === '-h' || sub === '--help') {
    deps.stdout(`${LAB_USAGE}\n`);
    return sub === undefined ? 2 : 0;
  }
  if (sub !== 'cleanup') throw new FlagError(`unknown lab subcommand ${JSON.stringify(sub)} (cleanup)`);
  const p = parseFlags(tail, {});
  if (p.help) {
    deps.stdout(`${LAB_USAGE}\n`);
    return 0;
  }
  if (p.positional.length || p.rest.length) throw new FlagError(`unexpected argument ${JSON.stringify([...p.positional, ...p.rest][0])}`);
  const removed = await deps.cleanupLabs();
  deps.stdout(removed.length ? `removed ${removed.length} leftover(s):\n${removed.map((r) => `  ${r}\n`).join('')}` : 'nothing left over\n');
  return 0;
}
