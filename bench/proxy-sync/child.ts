/**
 * bench/proxy-sync/child: how a case process is asked for (its argv) and how it answers (one line after
 * RESULT_MARK), for the parent on the host (run.ts) and test-vm's proxy-sync suite alike.
 */
export const RESULT_MARK = '@@RESULT ';

/** The arguments of the bench's bundle that run one case. */
export function caseArgv(script: string, c: { mode: string; services: number; netns: string }, o: { repeat: number; capS: number; restart: boolean }): string[] {
  return [script, '--case', `${c.mode}:${c.services}`, '--netns', c.netns, '--repeat', String(o.repeat), '--cap-s', String(o.capS), ...(o.restart ? [] : ['--no-restart'])];
}

/** The JSON after RESULT_MARK in a case process's stdout, or null when it printed none. @throws SyntaxError for a line that is not JSON */
export function caseOutput(stdout: string): unknown {
  const line = stdout.split('\n').find((l) => l.startsWith(RESULT_MARK));
  return line === undefined ? null : (JSON.parse(line.slice(RESULT_MARK.length)) as unknown);
}
