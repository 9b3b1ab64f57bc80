import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { METERED_METRICS } from '../../config/tiers';
import { MeterSummaryRow, MetersRepository } from './meters.repository';

/** One line of `usage:meters`: amounts in the metric's units, for the organisation's current period. */
export interface MeterReportLine extends MeterSummaryRow {
  organisation_id: string;
}

/** What `usage:meters` shows (spec §13): per organisation and metered metric, used against reported. */
@Injectable()
export class MeterReport {
  constructor(
    private readonly windows: MetersRepository,
    private readonly config: AppConfig,
  ) {}

  /** One organisation, or every organisation that has meter windows (in id order). */
  async lines(organisationId?: string): Promise<MeterReportLine[]> {
    const metrics = METERED_METRICS.filter((m) => this.config.providerMeters[m] !== undefined);
    if (!metrics.length) return [];
    const lines: MeterReportLine[] = [];
    for await (const org of organisationId ? [organisationId] : this.allOrganisations()) {
      for (const row of await this.windows.summary(org, metrics)) lines.push({ organisation_id: org, ...row });
    }
    return lines;
  }

  private async *allOrganisations(): AsyncGenerator<string> {
    for (let after: string | undefined, page: string[]; ; after = page.at(-1)) {
      page = await this.windows.meteredOrganisations(after, 500);
      yield* page;
      if (page.length < 500) return;
    }
  }
}
