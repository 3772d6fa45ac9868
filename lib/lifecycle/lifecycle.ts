/**
 * lifecycle/lifecycle: one ordered list of a process's components, each
 * with its start and its stop (Cilium's hive `cell.Lifecycle`, in small).
 *
 * - Components start in the order they were appended; each start may wait
 *   (a listen, a first list).
 * - A start that fails stops, in reverse order, every component that had
 *   started, and then throws the start's error: nothing half-started stays
 *   behind.
 * - stop() stops the started components in reverse order. A stop that
 *   fails is logged and the others still stop; stop() then throws the
 *   first error. A second stop() does nothing.
 *
 * One list replaces the hand-written start and stop sequences that drifted
 * apart (the control plane's two stop lists; the overlay started outside
 * the agent's documented order).
 */
import { F } from '../log/fields.js';
import { silentLogger, type Logger } from '../log/log.js';

export interface Hook {
  /** The component's name, for logs and errors. */
  readonly name: string;
  start?(): void | Promise<void>;
  stop?(): void | Promise<void>;
}

export class Lifecycle {
  private readonly hooks: Hook[] = [];
  private started: Hook[] = [];
  private state: 'new' | 'starting' | 'started' | 'stopped' = 'new';
  private readonly log: Logger;

  constructor(log?: Logger) {
    this.log = (log ?? silentLogger()).child({ [F.subsys]: 'lifecycle' });
  }

  /** Adds a component after the ones already there. @throws once start() was called */
  append(hook: Hook): void {
    if (this.state !== 'new') throw new Error(`lifecycle: ${hook.name} appended after start`);
    this.hooks.push(hook);
  }

  /** The names, in start order. */
  get names(): readonly string[] {
    return this.hooks.map((h) => h.name);
  }

  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error('lifecycle: started twice');
    this.state = 'starting';
    for (const h of this.hooks) {
      try {
        await h.start?.();
      } catch (e) {
        this.log.error({ [F.err]: e, component: h.name }, 'a component failed to start; stopping the ones that started');
        await this.stopStarted().catch(() => {});
        this.state = 'stopped';
        throw e;
      }
      this.started.push(h);
    }
    this.state = 'started';
  }

  async stop(): Promise<void> {
    if (this.state === 'stopped' || this.state === 'new') {
      this.state = 'stopped';
      return;
    }
    this.state = 'stopped';
    await this.stopStarted();
  }

  private async stopStarted(): Promise<void> {
    let first: unknown = null;
    for (const h of this.started.reverse()) {
      try {
        await h.stop?.();
      } catch (e) {
        this.log.error({ [F.err]: e, component: h.name }, 'a component failed to stop');
        first ??= e;
      }
    }
    this.started = [];
    if (first !== null) throw first;
  }
}
