import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ProviderSyncRun } from './provider-sync-run.entity';

/** A run that never finished (its instance died) shows as running for at most this long. */
const ABANDONED_AFTER = '1 day';

/** Every write of provider_sync_runs (see its entity): the only file that changes it. */
@Injectable()
export class ProviderSyncRunsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** A new run's row; runs that died without finishing are marked failed first, and rows past 90 days go. */
  async start(trigger: string): Promise<string> {
    await this.db.query(
      `UPDATE provider_sync_runs SET outcome = 'failed', error = 'the run did not finish (its instance stopped)', finished_at = now()
       WHERE outcome = 'running' AND started_at < now() - $1::interval`,
      [ABANDONED_AFTER],
    );
    await this.db.query(`DELETE FROM provider_sync_runs WHERE started_at < now() - interval '90 days'`);
    const { identifiers } = await this.db.getRepository(ProviderSyncRun).insert({ trigger });
    return String(identifiers[0].id);
  }

  async finish(id: string, result: { summary: Record<string, number> } | { error: string }): Promise<void> {
    await this.db
      .getRepository(ProviderSyncRun)
      .update(
        { id },
        'summary' in result
          ? { outcome: 'ok', summary: result.summary, finishedAt: () => 'now()' }
          : { outcome: 'failed', error: result.error.slice(0, 500), finishedAt: () => 'now()' },
      );
  }
}
