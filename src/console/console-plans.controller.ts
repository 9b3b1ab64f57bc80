import { Body, Controller, Get, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { AppException } from '../common/app-exception';
import { ConsoleSession } from '../common/route-auth.decorators';
import { UUID } from '../identity/identity.service';
import { ConsoleExceptionFilter } from './console-exception.filter';
import { redirectWithFlash, sendPage, takeFlash } from './console-pages';
import { ConsolePlansService, MigrationChoice } from './console-plans.service';
import { ConsoleRequest, ConsoleSessionGuard } from './console-session.guard';
import { ConsoleViews } from './console-views';

const TIER = /^[a-z0-9_]{1,64}$/;
const VERSION = /^[1-9]\d{0,8}$/;

/**
 * The tier and versions of a form (the preview's GET, the migration's POST): a tier name, and versions as whole
 * numbers or empty (the defaults: every older version, the newest). Anything else is a 400 page, nothing read.
 */
function choiceOf(fields: Record<string, unknown>): MigrationChoice | undefined {
  const { tier, from_version: from, to_version: to } = fields;
  if (tier === undefined || tier === '') return undefined;
  if (typeof tier !== 'string' || !TIER.test(tier)) throw new AppException('validation_failed', 'tier must be a tier name (lower-case letters, digits, _).');
  const version = (value: unknown, name: string) => {
    if (value === undefined || value === '') return undefined;
    if (typeof value !== 'string' || !VERSION.test(value)) throw new AppException('validation_failed', `${name} must be a version number (1 or more), or empty.`);
    return Number(value);
  };
  return { tier, fromVersion: version(from, 'from_version'), toVersion: version(to, 'to_version') };
}

/** The console's plans page and its migrate button (spec §17). HTML, not API: left out of the API document. */
@ApiExcludeController()
@ConsoleSession(ConsoleSessionGuard)
@UseFilters(ConsoleExceptionFilter)
@Controller('console/plans')
export class ConsolePlansController {
  constructor(
    private readonly plans: ConsolePlansService,
    private readonly views: ConsoleViews,
  ) {}

  @Get()
  async page(@Query() query: Record<string, unknown>, @Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    const { migration } = query;
    if (migration !== undefined && (typeof migration !== 'string' || !UUID.test(migration))) throw new AppException('validation_failed', 'migration must be a migration id (a UUID).');
    const data = await this.plans.page(choiceOf(query), migration);
    const html = this.views.render('plans', { title: 'Plans', section: 'plans', ...data, operator: req.operator, flash: takeFlash(req, res) });
    sendPage(res, 200, html);
  }

  @Post('migrations')
  async migrate(@Body() body: Record<string, unknown>, @Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    const choice = choiceOf(body);
    if (!choice) throw new AppException('validation_failed', 'tier is required.');
    if (body.at !== 'now' && body.at !== 'period_end') throw new AppException('validation_failed', 'at must be now or period_end.');
    const { flash, migrationId } = await this.plans.migrate(choice, body.at, req.operator!);
    const params = new URLSearchParams({ tier: choice.tier });
    if (choice.fromVersion !== undefined) params.set('from_version', String(choice.fromVersion));
    if (choice.toVersion !== undefined) params.set('to_version', String(choice.toVersion));
    if (migrationId) params.set('migration', migrationId);
    redirectWithFlash(res, `/console/plans?${params}`, flash);
  }
}
