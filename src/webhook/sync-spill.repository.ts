import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ProviderEvent } from '../provider/provider-event';
import { EVENT_RANK } from '../subscriptions/event-order';
import { preparedQuery } from '../database/prepared';
import { SyncSpillRow } from './sync-spill.entity';

/** A set-aside event in application order: `(created, rank, position)` ascending. */
export interface SpilledEvent {
  created: number;
  rank: number;
  position: number;
  payload: string;
}

/** A run's spill is gone by then: no run lasts a day, so older rows are a dead run's. */
const DEAD_RUN_AGE = '1 day';

/**
 * The reconciliation's spill table (provider_sync_spill, see its entity), and the only file with SQL for it:
 * each run's rows under its own id, so a run never reads another's, and one statement per page of the
 * provider's lists.
 */
@Injectable()
export class SyncSpillRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** A new run's id; what runs that died (killed, crashed) left behind goes first. */
  async begin(): Promise<string> {
    await this.db
      .createQueryBuilder()
      .delete()
      .from(SyncSpillRow)
      .where(`created_at < now() - :age::interval`, { age: DEAD_RUN_AGE })
      .execute();
    return randomUUID();
  }

  async end(runId: string): Promise<void> {
    await this.db.getRepository(SyncSpillRow).delete({ runId });
  }

  /**
   * Sets aside those events of one page that `keep` accepts (those the ledger lacks). `position` numbers the
   * whole list from 0 downwards (the provider lists newest first), so that ascending is oldest first among equals.
   */
  async keepEvents(runId: string, page: ProviderEvent[], firstPosition: number, keep: (e: ProviderEvent) => boolean): Promise<void> {
    const events = page.map((e, i) => ({ e, position: firstPosition - i })).filter(({ e }) => keep(e));
    if (!events.length) return;
    await preparedQuery(
      this.db,
      `INSERT INTO provider_sync_spill (run_id, kind, id, created, rank, position, payload)
       SELECT $1, 'event', * FROM unnest($2::text[], $3::bigint[], $4::smallint[], $5::integer[], $6::text[])
       ON CONFLICT DO NOTHING`,
      [
        runId,
        events.map(({ e }) => e.id),
        events.map(({ e }) => e.created),
        events.map(({ e }) => EVENT_RANK[e.type] ?? 9),
        events.map(({ position }) => position),
        events.map(({ e }) => JSON.stringify(e)),
      ],
    );
  }

  /** The next `limit` set-aside events in application order, after `after` (from the start when undefined). */
  async nextEvents(runId: string, after: SpilledEvent | undefined, limit: number): Promise<SpilledEvent[]> {
    return preparedQuery<SpilledEvent>(
      this.db,
      `SELECT created, rank, position, payload FROM provider_sync_spill
        WHERE run_id = $1 AND kind = 'event' AND ($2::bigint IS NULL OR (created, rank, position) > ($2, $3, $4))
        ORDER BY created, rank, position LIMIT $5`,
      [runId, after?.created ?? null, after?.rank ?? null, after?.position ?? null, limit],
    );
  }

  /** The subscriptions one page of the provider's list showed. */
  async seeSubscriptions(runId: string, ids: string[]): Promise<void> {
    await preparedQuery(
      this.db,
      `INSERT INTO provider_sync_spill (run_id, kind, id) SELECT $1, 'subscription', unnest($2::text[]) ON CONFLICT DO NOTHING`,
      [runId, ids],
    );
  }

  /** Those of `ids` the provider's list did not show in this run. */
  async unseenSubscriptions(runId: string, ids: string[]): Promise<Set<string>> {
    const rows = await preparedQuery<{ id: string }>(
      this.db,
      `SELECT i.id FROM unnest($2::text[]) AS i(id)
        WHERE NOT EXISTS (SELECT 1 FROM provider_sync_spill s WHERE s.run_id = $1 AND s.kind = 'subscription' AND s.id = i.id)`,
      [runId, ids],
    );
    return new Set(rows.map((r) => r.id));
  }
}
