import { Body, Controller, Get, Header, Param, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { parse } from 'cookie';
import type { Response } from 'express';
import { AppException } from '../common/app-exception';
import { Public } from '../common/route-auth.decorators';
import { consoleAssets } from './console-assets';
import { CONSOLE_COOKIE, ConsoleAuthService, SIGN_IN_LINK_PATH } from './console-auth.service';
import { ConsoleExceptionFilter } from './console-exception.filter';
import { ConsoleOidcService, OIDC_CALLBACK_PATH, OIDC_COOKIE } from './console-oidc.service';
import { sendPage } from './console-pages';
import type { ConsoleRequest } from './console-session.guard';
import { ConsoleViews } from './console-views';
import { OidcRefused, OidcUnavailable } from './oidc-errors';

/** The routes whose query carries a credential (a link's token, the provider's code): the request log omits its values. */
export const CREDENTIAL_QUERY_PATHS = [SIGN_IN_LINK_PATH, OIDC_CALLBACK_PATH];

/**
 * What the console serves before sign-in: the sign-in page, the one-time link (GET shows a button, POST
 * redeems it: a mail scanner or a link preview fetching the URL does not use it up), the sign-in through the
 * OpenID provider when CONSOLE_OIDC_* are set (start, then the provider's callback), and the pages' assets.
 */
@ApiExcludeController()
@Public()
@UseFilters(ConsoleExceptionFilter)
@Controller('console')
export class SignInController {
  constructor(
    private readonly auth: ConsoleAuthService,
    private readonly views: ConsoleViews,
    private readonly oidc: ConsoleOidcService,
  ) {}

  @Get('sign-in')
  signIn(@Res() res: Response): void {
    this.signInPage(res, 200);
  }

  /**
   * The sign-in button's target (a link, not a form: the console's CSP allows forms to post to itself only,
   * and browsers apply that to the redirect that follows): sends the browser to the OpenID provider.
   */
  @Get('oidc/start')
  async oidcStart(@Res() res: Response): Promise<void> {
    this.requireOidc();
    try {
      const { handle, location } = await this.oidc.start();
      res.cookie(OIDC_COOKIE, handle, this.oidc.cookieOptions());
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(303, location);
    } catch (err) {
      this.oidcFailure(res, err);
    }
  }

  /**
   * Where the provider sends the operator back. Signed in: a page that moves on to /console by itself (a
   * meta refresh, no script). A redirect would not do: the browser arrived from the provider's site, and
   * SameSite=Strict keeps the new console_session cookie off every request of that navigation.
   */
  @Get('oidc/callback')
  async oidcCallback(@Req() req: ConsoleRequest, @Res() res: Response): Promise<void> {
    this.requireOidc();
    const handle = req.headers.cookie ? parse(req.headers.cookie)[OIDC_COOKIE] : undefined;
    const query = req.originalUrl.indexOf('?');
    res.clearCookie(OIDC_COOKIE, { path: this.oidc.cookieOptions().path });
    try {
      const session = await this.oidc.finish(handle, query < 0 ? '' : req.originalUrl.slice(query), req.id ?? null);
      res.cookie(CONSOLE_COOKIE, session, this.auth.cookieOptions());
      sendPage(res, 200, this.views.render('signedIn', { title: 'Signed in', refresh: '/console' }));
    } catch (err) {
      this.oidcFailure(res, err);
    }
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
    this.signInPage(res, 400, 'This sign-in link is expired, already used or not a link of this service. Ask for a new one.');
  }

  private signInPage(res: Response, status: number, problem?: string): void {
    sendPage(res, status, this.views.render('signIn', { title: 'Sign in', problem, provider: this.oidc.providerName }));
  }

  private requireOidc(): void {
    if (!this.oidc.providerName) throw new AppException('not_found', 'Sign-in through an OpenID provider is not configured (CONSOLE_OIDC_*).');
  }

  /** A refused or failed OpenID sign-in: the sign-in page saying why; anything else goes to the filter. */
  private oidcFailure(res: Response, err: unknown): void {
    if (err instanceof OidcRefused) return this.signInPage(res, err.status, err.message);
    if (err instanceof OidcUnavailable) {
      return this.signInPage(res, 503, `The OpenID provider ${this.oidc.providerName} cannot be reached right now. Try again in a minute.`);
    }
    throw err;
  }
}
