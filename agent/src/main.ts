/**
 * main: the composition root. The only place real dependencies (netlink
 * sockets, the exec runner, the disk store, gRPC servers, the logger) are
 * built; everything below takes them as deps.
 */
import { runCli } from './cli/cli.js';
import { startAgent } from './agent.js';
import { ExecaRunner } from './exec/runner.js';
import { silentLogger } from './log/log.js';
import { removeProxyRules } from './proxy-host.js';

runCli(process.argv.slice(2), {
  startAgent: (cfg) => startAgent(cfg),
  runner: new ExecaRunner(),
  removeProxyRules: (o, mode) => removeProxyRules({ ...o, log: silentLogger() }, mode),
}).then(
  (code) => { process.exitCode = code; },
  (err: unknown) => {
    process.stderr.write(`nodenet: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
