import { Controller, Get, Post, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { ConsoleSession } from '../common/route-auth.decorators';
import { CONSOLE_COOKIE, ConsoleAuthService } from './console-auth.service';
import { ConsoleExceptionFilter } from './console-exception.filter';
import { sendPage, takeFlash } from './console-pages';
import { consoleToken, ConsoleRequest, ConsoleSessionGuard } from './console-session.guard';
import { ConsoleViews, PageData } from './console-views';
import { ConsoleService } from './console.service';

/** The console's pages for a signed-in operator (spec §14). HTML, not API: left out of the API document. */
@ApiExcludeController()
@ConsoleSession(ConsoleSessionGuard)
@UseFilters(ConsoleExceptionFilter)
@Controller('console')
export class ConsoleController {
  constructor(
    private readonly console: ConsoleService,
    private readonly auth: ConsoleAuthService,
    private readonly views: ConsoleViews,
  ) {}

  @Get()
  async overview(@Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    this.page(req, res, 'overview', { title: 'Overview', section: 'overview', chart: true, o: await this.console.overview() });
  }

  @Post('sign-out')
  async signOut(@Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    await this.auth.signOut(consoleToken(req));
    res.clearCookie(CONSOLE_COOKIE, { path: '/console' });
    res.redirect(303, '/console/sign-in');
  }

  private page(req: ConsoleRequest, res: Response, template: Parameters<ConsoleViews['render']>[0], data: PageData): void {
    sendPage(res, 200, this.views.render(template, { ...data, operator: req.operator, flash: takeFlash(req, res) }));
  }
}
