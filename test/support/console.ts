import { cli } from './run-cli';
import { TestApp } from './test-app';

/** A one-time sign-in link of the operator console for `email`, as `console:link` prints it. */
export async function consoleLink(t: TestApp, email: string, ...flags: string[]): Promise<string> {
  const res = await cli(['console:link', '--email', email, ...flags], {}, { app: t.app });
  if (res.code !== 0) throw new Error(`console:link failed: ${res.stderr}`);
  return res.json.url as string;
}

/** Signs `email` in to the console as its sign-in form does; answers the Cookie header of the session. */
export async function consoleCookie(t: TestApp, email = 'ops@example.com'): Promise<string> {
  const token = new URL(await consoleLink(t, email)).searchParams.get('token');
  const res = await t.http().post('/console/sign-in/link').type('form').send({ token }).expect(303);
  return `console_session=${/console_session=([^;]+)/.exec(res.headers['set-cookie'][0])![1]}`;
}

/** The CSRF token a console page's forms carry. */
export const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1];
