import { Injectable, Logger } from '@nestjs/common';

/** A credits metric an accepted report left below its automatic top-up's threshold (spec §16.4). */
export interface RechargeDue {
  organisationId: string;
  metric: string;
}

/**
 * What committed usage hands on to modules above licensing, after its commit and without the report waiting for
 * them: credits registers here to buy the automatic top-ups the reports made due (spec §16.4). A listener runs its
 * own work and reports its own failures; the report's answer never depends on it.
 */
@Injectable()
export class UsageCommits {
  private readonly logger = new Logger('UsageCommits');
  private readonly listeners: ((due: RechargeDue[]) => Promise<unknown>)[] = [];

  onRechargeDue(listener: (due: RechargeDue[]) => Promise<unknown>): void {
    this.listeners.push(listener);
  }

  /** Called once the statement's work is committed; does not wait for the listeners. */
  rechargeDue(due: RechargeDue[]): void {
    if (!due.length) return;
    for (const listener of this.listeners) {
      listener(due).catch((err: unknown) => this.logger.warn(`after-commit step failed: ${err instanceof Error ? err.message : String(err)}`));
    }
  }
}
