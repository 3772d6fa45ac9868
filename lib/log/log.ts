/**
 * log: the pino root logger. Modules take a Logger in their deps and call
 * `log.child({ subsys: 'proxy/iptables' })`. Errors go under `err`.
 * Full rule dumps are logged at `trace` only.
 */
import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger, LevelWithSilent };

export interface LogOptions {
  level?: LevelWithSilent;
  /** A file descriptor or path; default stderr (stdout belongs to CLI output and to CNI results). */
  destination?: number | string;
  name?: string;
}

export function createLogger(opts: LogOptions = {}): Logger {
  const dest = pino.destination({ dest: opts.destination ?? 2, sync: true, mkdir: true });
  return pino(
    {
      name: opts.name ?? 'nodenet',
      level: opts.level ?? ((process.env['NODENET_LOG_LEVEL'] as LevelWithSilent | undefined) ?? 'info'),
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      serializers: { err: pino.stdSerializers.err },
    },
    dest,
  );
}

/** A logger that drops everything, for unit tests. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
