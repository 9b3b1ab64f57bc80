import { parse } from 'cookie';
import type { Response } from 'express';
import type { ConsoleRequest } from './console-session.guard';
import type { Flash } from './console-views';

/*
 * How console routes answer: a page, or (after an action) a redirect to the page that shows the outcome, the
 * outcome riding along in a short-lived cookie so that a reload never repeats the action (post/redirect/get).
 */

const FLASH_COOKIE = 'console_flash';

export function sendPage(res: Response, status: number, html: string): void {
  res.status(status).type('html').setHeader('Cache-Control', 'no-store');
  res.send(html);
}

/** After an action: back to `location` (a console path), which shows `flash`. */
export function redirectWithFlash(res: Response, location: string, flash: Flash): void {
  res.cookie(FLASH_COOKIE, Buffer.from(JSON.stringify(flash)).toString('base64url'), {
    httpOnly: true,
    sameSite: 'strict',
    path: '/console',
    maxAge: 60_000,
  });
  res.redirect(303, location);
}

/** The outcome of the action that led here, shown once. */
export function takeFlash(req: ConsoleRequest, res: Response): Flash | undefined {
  const raw = req.headers.cookie ? parse(req.headers.cookie)[FLASH_COOKIE] : undefined;
  if (!raw) return undefined;
  res.clearCookie(FLASH_COOKIE, { path: '/console' });
  try {
    const flash = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Flash;
    return (flash.kind === 'done' || flash.kind === 'refused') && typeof flash.text === 'string' ? { kind: flash.kind, text: flash.text.slice(0, 500) } : undefined;
  } catch {
    return undefined;
  }
}
