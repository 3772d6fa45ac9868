/**
 * `nodenet serve`: its flags (pure), and the command itself on loopback:
 * it prints where it listens, SIGTERM stops it with 0, /exit?code=N makes
 * the command return N (main.ts turns that into the exit code).
 */
import t from 'tap';
import { pino } from 'pino';
import { runCli, type CliDeps } from './cli.js';
import { FlagError } from './flags.js';
import { serveCommand, serveOptionsFromArgs } from './serve-cmd.js';

const quiet = pino({ level: 'silent' });

t.test('defaults: http 8080, tcp 9000, udp 9001 on 0.0.0.0, named $POD_NAME, else the hostname', async (t) => {
  t.same(serveOptionsFromArgs([], {}, 'vm1'), { name: 'vm1', bind: '0.0.0.0', http: [8080], tcp: [9000], udp: [9001], termDelayMs: 0, help: false });
  t.equal(serveOptionsFromArgs([], { POD_NAME: 'web-7f' }, 'vm1').name, 'web-7f');
  t.equal(serveOptionsFromArgs(['--name', 'x'], { POD_NAME: 'web-7f' }, 'vm1').name, 'x', '--name wins');
});

t.test('port lists: comma-separated, empty turns one off, 0 is a free port', async (t) => {
  const o = serveOptionsFromArgs(['--http', '80,8080', '--tcp', '', '--udp', '0', '--bind', '127.0.0.1', '--term-delay-ms', '1500'], {}, 'h');
  t.same([o.http, o.tcp, o.udp, o.bind, o.termDelayMs], [[80, 8080], [], [0], '127.0.0.1', 1500]);
});

t.test('bad flags are usage errors naming the flag', async (t) => {
  const bad: [string[], RegExp][] = [
    [['--http', '80,x'], /--http "80,x": expected ports/],
    [['--tcp', '70000'], /--tcp "70000"/],
    [['--bind', 'localhost'], /--bind "localhost": expected an IPv4 address/],
    [['--bind', '300.1.1.1'], /--bind "300.1.1.1"/],
    [['--term-delay-ms=-1'], /--term-delay-ms "-1"/],
    [['--name', 'a b'], /--name "a b"/],
    [['--http', '', '--tcp', '', '--udp', ''], /nothing to serve/],
    [['extra'], /unexpected argument "extra"/],
    [['--port', '1'], /unknown flag --port/],
  ];
  for (const [argv, msg] of bad) t.throws(() => serveOptionsFromArgs(argv, {}, 'h'), { message: msg }, argv.join(' '));
  t.throws(() => serveOptionsFromArgs(['--http', 'x'], {}, 'h'), FlagError);
});

t.test('the command: prints its ports; SIGTERM (injected) ends it with 0', async (t) => {
  let out = '';
  let signal: (() => void) | null = null;
  let unsubscribed = false;
  const running = serveCommand(['--bind', '127.0.0.1', '--http', '0', '--tcp', '0', '--udp', '', '--name', 'srv'], {
    stdout: (s) => void (out += s),
    log: quiet,
    onSignal: (fn) => { signal = fn; return () => void (unsubscribed = true); },
  });
  while (!out) await new Promise((r) => setTimeout(r, 10));
  const m = /^serving as srv: http=127\.0\.0\.1:(\d+) tcp=127\.0\.0\.1:(\d+)\n$/.exec(out);
  t.ok(m, out);
  t.equal(await (await fetch(`http://127.0.0.1:${m![1]}/hostname`)).text(), 'srv\n');
  t.ok(signal);
  signal!();
  t.equal(await running, 0);
  t.ok(unsubscribed, 'the signal handlers are removed');
});

t.test('the command: /exit?code=N returns N', async (t) => {
  let out = '';
  const running = serveCommand(['--bind', '127.0.0.1', '--http', '0', '--tcp', '', '--udp', ''], { stdout: (s) => void (out += s), log: quiet, onSignal: () => () => undefined, hostname: () => 'h1' });
  while (!out) await new Promise((r) => setTimeout(r, 10));
  const port = /http=127\.0\.0\.1:(\d+)/.exec(out)![1];
  t.equal(await (await fetch(`http://127.0.0.1:${port}/exit?code=3`)).text(), 'exiting 3\n');
  t.equal(await running, 3);
});

t.test('through runCli: -h prints the usage, a bad flag exits 2 with it', async (t) => {
  let out = '';
  let err = '';
  const deps = { stdout: (s: string) => void (out += s), stderr: (s: string) => void (err += s) } as unknown as CliDeps;
  t.equal(await runCli(['serve', '-h'], deps), 0);
  t.match(out, /^usage: nodenet serve/);
  t.equal(await runCli(['serve', '--udp', 'nope'], deps), 2);
  t.match(err, /^nodenet serve: --udp "nope": expected ports[\s\S]*usage: nodenet serve/);
  t.equal(await runCli(['help', 'serve'], deps), 0);
});
