/**
 * main: the entry point. It takes the real dependencies from node/compose.ts
 * (the only place that builds them) and runs the command line.
 */
import { runCli } from './cli/cli.js';
import { cliDeps } from './node/compose.js';

runCli(process.argv.slice(2), cliDeps()).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`nodenet: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
