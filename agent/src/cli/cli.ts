/**
 * cli: the `nodenet` command. Subcommands are added by the modules' issues:
 * agent, pod, demo, trace, bench.
 */
export const VERSION = '0.1.0';

const USAGE = `usage: nodenet <command> [options]

commands:
  version            print the version
`;

export async function runCli(argv: readonly string[]): Promise<number> {
  const [cmd] = argv;
  switch (cmd) {
    case 'version':
    case '--version':
      process.stdout.write(`nodenet ${VERSION}\n`);
      return 0;
    case undefined:
    case 'help':
    case '--help':
      process.stdout.write(USAGE);
      return cmd === undefined ? 2 : 0;
    default:
      process.stderr.write(`nodenet: unknown command ${JSON.stringify(cmd)}\n${USAGE}`);
      return 2;
  }
}
