import { Body, Controller, Get, Header, Param, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { AppException } from '../common/app-exception';
import { Public } from '../common/route-auth.decorators';
import { consoleAssets } from './console-assets';
import { CONSOLE_COOKIE, ConsoleAuthService } from './console-auth.service';
import { ConsoleExceptionFilter } from './console-exception.filter';
import { sendPage } from './console-pages';
import type { ConsoleRequest } from './console-session.guard';
import { ConsoleViews } from './console-views';

/**
 * What the console serves before sign-in: the sign-in page, the one-time link (GET shows a button, POST
 * redeems it: a mail scanner or a link preview fetching the URL does not use it up), and the pages' assets.
 */
@ApiExcludeController()
@Public()
@UseFilters(ConsoleExceptionFilter)
@Controller('console')
export class SignInController {
  constructor(
    private readonly auth: ConsoleAuthService,
    private readonly views: ConsoleViews,
  ) {}

  @Get('sign-in')
  signIn(@Res() res: Response): void {
    sendPage(res, 200, this.views.render('signIn', { title: 'Sign in' }));
  }

  @Get('sign-in/link')
  link(@Query('token') token: unknown, @Res() res: Response): void {
    if (typeof token !== 'string' || token.length > 100) return this.refuse(res);
    sendPage(res, 200, this.views.render('link', { title: 'Sign in to the console', token }));
  }

  @Post('sign-in/link')
  async redeem(@Body('token') token: unknown, @Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    const session = await this.auth.redeemLink(token, req.id ?? null);
    if (!session) return this.refuse(res);
    res.cookie(CONSOLE_COOKIE, session, this.auth.cookieOptions());
    res.redirect(303, '/console');
  }

  @Get('assets/:name')
  @Header('Cache-Control', 'public, max-age=3600')
  asset(@Param('name') name: string, @Res() res: Response): void {
    const asset = Object.hasOwn(consoleAssets(), name) ? consoleAssets()[name] : undefined;
    if (!asset) throw new AppException('not_found', 'No such console asset.');
    res.type(asset.type).send(asset.body);
  }

  private refuse(res: Response): void {
    const problem = 'This sign-in link is expired, already used or not a link of this service. Ask for a new one.';
    sendPage(res, 400, this.views.render('signIn', { title: 'Sign in', problem }));
  }
}
