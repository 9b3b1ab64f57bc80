import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppException } from '../common/app-exception';
import { transaction } from '../database/transaction';
import { UsageService } from '../licensing/usage.service';
import type { ReservationAnswer, UsageAnswer } from '../licensing/usage.service';
import { CreditsRepository } from './credits.repository';

/** How long a hold lasts when the caller does not say (spec §16.5). */
export const DEFAULT_HOLD_TTL_S = 300;

export const reservationNotFound = (id: string) => new AppException('reservation_not_found', `No reservation ${id}.`);

/**
 * Reservations (spec §16.5): a hold and its commit go through licensing's usage write, the one place that decides
 * what a metric allows (a hold is checked exactly as a report of its amount, and every report and check counts the
 * live holds); a release is credits' own, under the reservation's row lock, so that it and a concurrent commit
 * settle it once. A caller that names the organisation never reaches another's reservation.
 */
@Injectable()
export class ReservationsService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly usage: UsageService,
    private readonly repository: CreditsRepository,
  ) {}

  reserve(r: { organisationId: string; metric: string; amount: number; ttlS?: number; idempotencyKey?: string }): Promise<ReservationAnswer> {
    return this.usage.reserve({
      organisationId: r.organisationId,
      metric: r.metric,
      amount: r.amount,
      idempotencyKey: r.idempotencyKey,
      holdTtlS: r.ttlS ?? DEFAULT_HOLD_TTL_S,
    });
  }

  commit(id: string, amount: number, organisationId?: string): Promise<UsageAnswer> {
    return this.usage.commit(id, amount, organisationId);
  }

  /** Released (again: nothing more); 409 `reservation_committed` after a commit; 404 for an unknown one. */
  async release(id: string, organisationId?: string): Promise<void> {
    await transaction(this.db, async (m) => {
      const r = await this.repository.lockReservation(m, id);
      if (!r || (organisationId !== undefined && r.organisationId !== organisationId)) throw reservationNotFound(id);
      if (r.status === 'committed') {
        throw new AppException('reservation_committed', `Reservation ${id} was committed: what it spent is counted and nothing is held.`);
      }
      if (r.status === 'released') return;
      await this.repository.releaseReservation(m, id, r);
    });
  }
}
