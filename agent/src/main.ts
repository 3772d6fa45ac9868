/**
 * main: the composition root. The only place real dependencies (netlink
 * sockets, the exec runner, the disk store, gRPC servers, the logger) are built.
 */
import { runCli } from './cli/cli.js';

runCli(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (err: unknown) => {
    process.stderr.write(`nodenet: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
