import { Body, Controller, Get, Param, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { AppException } from '../common/app-exception';
import { ConsoleSession } from '../common/route-auth.decorators';
import { UUID } from '../identity/identity.service';
import { DELIVERY_STATUSES, DeliveryStatus } from '../notifications/notification-delivery.entity';
import { LEDGER_STATUSES, LedgerStatus } from '../provider/provider-event';
import { CONSOLE_COOKIE, ConsoleAuthService } from './console-auth.service';
import { ConsoleExceptionFilter } from './console-exception.filter';
import { ConsoleOidcService } from './console-oidc.service';
import { redirectWithFlash, sendPage, takeFlash } from './console-pages';
import { consoleToken, ConsoleRequest, ConsoleSessionGuard } from './console-session.guard';
import { ConsoleViews, PageData } from './console-views';
import { PARTIAL_SEARCH_MIN } from './console.repository';
import { ConsoleService, REPLAYABLE } from './console.service';

type Template = Parameters<ConsoleViews['render']>[0];

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** An optional text query parameter (a repeated one, `?q=a&q=b`, is refused). */
function text(value: unknown, name: string, max = 200): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || value.length > max) throw new AppException('validation_failed', `${name} must be one text of at most ${max} characters.`);
  return value;
}

function oneOf<T extends string>(value: unknown, name: string, values: readonly T[]): T | undefined {
  const given = text(value, name);
  if (given !== undefined && !values.includes(given as T)) throw new AppException('validation_failed', `${name} must be one of ${values.join(', ')}.`);
  return given as T | undefined;
}

/** A `YYYY-MM-DD` day (UTC) as a time: its start, or with `next` the start of the day after. */
function day(value: unknown, name: string, next = false): Date | undefined {
  const given = text(value, name);
  if (given === undefined) return undefined;
  const date = DATE.test(given) ? new Date(`${given}T00:00:00Z`) : new Date(NaN);
  if (Number.isNaN(date.getTime())) throw new AppException('validation_failed', `${name} must be a date (YYYY-MM-DD).`);
  return next ? new Date(date.getTime() + 86_400_000) : date;
}

/** Where an action returns: the console page it was posted from, never another site. */
function backTo(value: unknown, fallback: string): string {
  return typeof value === 'string' && /^\/console(\/[A-Za-z0-9_\-./%?=&+:~,]*)?$/.test(value) && !value.includes('//') ? value : fallback;
}

/** The console's pages and actions for a signed-in operator (spec §14). HTML, not API: left out of the API document. */
@ApiExcludeController()
@ConsoleSession(ConsoleSessionGuard)
@UseFilters(ConsoleExceptionFilter)
@Controller('console')
export class ConsoleController {
  constructor(
    private readonly console: ConsoleService,
    private readonly auth: ConsoleAuthService,
    private readonly views: ConsoleViews,
    private readonly oidc: ConsoleOidcService,
  ) {}

  @Get()
  async overview(@Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    this.page(req, res, 'overview', { title: 'Overview', section: 'overview', chart: true, o: await this.console.overview() });
  }

  @Get('organisations')
  async organisations(@Query('q') q: unknown, @Query('after') after: unknown, @Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    const query = text(q, 'q') ?? '';
    const found = await this.console.organisations(query, text(after, 'after', 2000));
    this.page(req, res, 'organisations', { title: 'Organisations', section: 'organisations', q: query, after, partialMin: PARTIAL_SEARCH_MIN, ...found });
  }

  @Get('organisations/:id')
  async organisation(@Param('id') id: string, @Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    const d = await this.console.organisation(id);
    this.page(req, res, 'organisation', { title: d.organisation.name, section: 'organisations', d, replayable: REPLAYABLE, back: req.originalUrl });
  }

  @Post('organisations/:id/overrides')
  async setOverride(@Param('id') id: string, @Body() body: Record<string, unknown>, @Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    const field = (name: string, max = 500) => text(body[name], name, max) ?? '';
    const flash = await this.console.setOverride(
      id,
      { name: field('name', 100), value: field('value', 20), expiresAt: field('expires_at', 30), note: field('note') },
      req.operator!,
    );
    redirectWithFlash(res, `/console/organisations/${encodeURIComponent(id)}`, flash);
  }

  @Post('organisations/:id/overrides/:name/delete')
  async removeOverride(@Param('id') id: string, @Param('name') name: string, @Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    redirectWithFlash(res, `/console/organisations/${encodeURIComponent(id)}`, await this.console.removeOverride(id, name, req.operator!));
  }

  @Post('organisations/:id/credits/grants')
  async grantCredits(@Param('id') id: string, @Body() body: Record<string, unknown>, @Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    const field = (name: string, max = 500) => text(body[name], name, max) ?? '';
    const flash = await this.console.grantCredits(
      id,
      {
        metric: field('metric', 100),
        amount: field('amount', 20),
        category: field('category', 20),
        priority: field('priority', 5),
        expiresAt: field('expires_at', 30),
        note: field('note'),
        idempotencyKey: field('idempotency_key', 255),
      },
      req.operator!,
    );
    redirectWithFlash(res, `/console/organisations/${encodeURIComponent(id)}`, flash);
  }

  @Post('organisations/:id/credits/grants/:grantId/void')
  async voidCredits(@Param('id') id: string, @Param('grantId') grantId: string, @Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    redirectWithFlash(res, `/console/organisations/${encodeURIComponent(id)}`, await this.console.voidCredits(id, grantId, req.operator!));
  }

  @Get('events')
  async events(@Query() query: Record<string, unknown>, @Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    const f = {
      status: oneOf<LedgerStatus>(query.status, 'status', LEDGER_STATUSES),
      type: text(query.type, 'type'),
      from: text(query.from, 'from'),
      to: text(query.to, 'to'),
      organisation_id: text(query.organisation_id, 'organisation_id'),
    };
    if (f.organisation_id && !UUID.test(f.organisation_id)) throw new AppException('validation_failed', 'organisation_id must be a UUID.');
    const before = text(query.before, 'before', 2000);
    const found = await this.console.events(
      { status: f.status, type: f.type, from: day(f.from, 'from'), to: day(f.to, 'to', true), organisationId: f.organisation_id },
      before,
    );
    this.page(req, res, 'events', {
      title: 'Webhook events',
      section: 'events',
      f,
      before,
      statuses: LEDGER_STATUSES,
      replayable: REPLAYABLE,
      back: req.originalUrl,
      ...found,
    });
  }

  @Get('events/:id')
  async event(@Param('id') id: string, @Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    const e = await this.console.event(id);
    this.page(req, res, 'event', { title: `Event ${e.id}`, section: 'events', e, back: req.originalUrl });
  }

  @Post('events/:id/replay')
  async replay(@Param('id') id: string, @Body('back') back: unknown, @Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    const flash = await this.console.replay(id, req.operator!);
    redirectWithFlash(res, backTo(back, `/console/events/${encodeURIComponent(id)}`), flash);
  }

  @Get('notifications')
  async notifications(@Query('status') status: unknown, @Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    const wanted = oneOf<DeliveryStatus>(status, 'status', DELIVERY_STATUSES);
    const rows = await this.console.notifications(wanted);
    this.page(req, res, 'notifications', { title: 'Notifications', section: 'notifications', status: wanted, rows, back: req.originalUrl });
  }

  @Post('notifications/:id/retry')
  async retry(@Param('id') id: string, @Body('back') back: unknown, @Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    const flash = await this.console.retry(id, req.operator!);
    redirectWithFlash(res, backTo(back, '/console/notifications'), flash);
  }

  @Get('reconciliation')
  async reconciliation(@Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    this.page(req, res, 'reconciliation', { title: 'Reconciliation', section: 'reconciliation', runs: await this.console.syncRuns() });
  }

  @Post('reconciliation/run')
  async runSync(@Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    redirectWithFlash(res, '/console/reconciliation', await this.console.runSync(req.operator!));
  }

  @Get('audit')
  async audit(@Query('after') after: unknown, @Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    const startingAfter = text(after, 'after', 20);
    const { rows, next } = await this.console.auditLog(startingAfter);
    this.page(req, res, 'audit', { title: 'Audit log', section: 'audit', rows, after: startingAfter, next });
  }

  @Get('audit/:id')
  async auditEntry(@Param('id') id: string, @Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    const entry = await this.console.auditEntry(id);
    this.page(req, res, 'auditEntry', { title: `Audit entry ${entry.id}`, section: 'audit', entry });
  }

  @Post('sign-out')
  async signOut(@Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    const via = await this.auth.signOut(consoleToken(req));
    res.clearCookie(CONSOLE_COOKIE, { path: '/console' });
    const endSession = via === 'oidc' ? await this.oidc.endSessionUrl() : undefined;
    if (!endSession) return res.redirect(303, '/console/sign-in');
    // On to the provider to end its session too, by a page: the console's CSP (form-action 'self') also
    // covers the redirect after a form post, so Chromium would block a redirect to another site.
    sendPage(res, 200, this.views.render('signedOut', { title: 'Signed out', refresh: endSession, provider: this.oidc.providerName }));
  }

  private page(req: ConsoleRequest, res: Response, template: Template, data: PageData): void {
    sendPage(res, 200, this.views.render(template, { ...data, operator: req.operator, flash: takeFlash(req, res) }));
  }
}
