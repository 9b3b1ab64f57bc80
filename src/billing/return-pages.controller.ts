import { Controller, Get, Header, Query } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Public } from '../common/route-auth.decorators';
import { esc, htmlPage } from '../common/html-page';
// What a checkout session id looks like (GET /api/billing/session's rule); anything else is not shown.
import { SESSION_ID } from './checkout-report.service';

const page = (title: string, body: string) => htmlPage(`${title} · Billing`, `<h1>${esc(title)}</h1>\n${body}`);

/**
 * Where a buyer lands back with the default APP_URL (this service's own origin): after paying
 * (`/billing/success?session_id=…`, checkout's default success_url; `&credits=1` after a credit pack's), after cancelling a checkout
 * (`/billing/cancel`) and after leaving the portal (`/billing`). A web app with its own APP_URL serves these
 * itself. Public and static: they say what happened and read nothing, so the session id in the query is
 * never looked up (it is only echoed, escaped, when it has the shape of one). No script, as everywhere but
 * the API docs (the global CSP allows none).
 */
@ApiExcludeController()
@Public()
@Controller('billing')
export class ReturnPagesController {
  @Get('success')
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  success(@Query('session_id') sessionId: unknown, @Query('credits') credits: unknown): string {
    const shown = typeof sessionId === 'string' && SESSION_ID.test(sessionId);
    const reference = shown ? `\n<p>Reference: <code>${esc(sessionId)}</code></p>` : '';
    // `credits=1`: the default return of a credit pack's checkout (spec §16.3).
    const what = credits === '1' ? 'Your credits are being added' : 'Your plan is being activated';
    return page(
      'Payment received',
      `<p>Thank you. ${what}; it can take a few seconds to show in the application.</p>${reference}
<p>You can close this page.</p>`,
    );
  }

  @Get('cancel')
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  cancel(): string {
    return page(
      'Checkout cancelled',
      `<p>Nothing was charged. You can start a new checkout from the application whenever you like.</p>
<p>You can close this page.</p>`,
    );
  }

  @Get()
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  portalReturn(): string {
    return page(
      'Back from the billing portal',
      `<p>Any change you made there is being applied; it can take a few seconds to show in the application.</p>
<p>You can close this page.</p>`,
    );
  }
}
