import { BillingProvider, CreditBalance, Paywall, PlanManager, PricingTable, UsageMeter, useEntitlements } from '@billing-licensing/react';
import { useState } from 'react';
import { readSession, signOut, type ExampleSession } from './session';

/** The service: npm run example sets VITE_BILLING_URL; the default is `npm start`'s. */
const BILLING_URL: string = import.meta.env.VITE_BILLING_URL ?? 'http://localhost:3000';

export function App() {
  const [session, setSession] = useState<ExampleSession | null>(() => readSession());
  const [expired, setExpired] = useState(false);
  if (!session) return <SignedOut expired={expired} />;
  return (
    <BillingProvider
      baseUrl={BILLING_URL}
      organisationId={session.organisationId}
      getToken={() => session.token}
      onUnauthorized={() => {
        signOut();
        setExpired(true);
        setSession(null);
      }}
    >
      <Shell />
    </BillingProvider>
  );
}

function SignedOut({ expired }: { expired: boolean }) {
  return (
    <main className="app">
      <h1>Example web app</h1>
      <p>{expired ? 'Your session has ended.' : 'You are not signed in.'}</p>
      <p>
        Run <code>npm run example</code> at the repository&apos;s root and open the link it prints: it signs you in as a demo user of
        a sandbox organisation.
      </p>
    </main>
  );
}

const PAGES = [
  { path: '/', name: 'Workspace' },
  { path: '/billing', name: 'Billing' },
] as const;

/** Where the sandbox's checkout and portal send the buyer back (APP_URL/billing/…). */
function returnNotice(path: string): string | null {
  if (path === '/billing/success') {
    return new URLSearchParams(window.location.search).has('credits') ? 'Payment received: your credits are on their way.' : 'Payment received: welcome to your new plan.';
  }
  if (path === '/billing/cancel') return 'Checkout canceled: nothing was charged.';
  return null;
}

function Shell() {
  const path = window.location.pathname;
  const page = path.startsWith('/billing') ? '/billing' : '/';
  const notice = returnNotice(path);
  const entitlements = useEntitlements();
  return (
    <>
      <header className="app-header">
        <p className="app-name">Acme workspace</p>
        <nav aria-label="Pages">
          {PAGES.map((p) => (
            <a key={p.path} href={p.path} aria-current={p.path === page ? 'page' : undefined}>
              {p.name}
            </a>
          ))}
        </nav>
        <p className="app-tier">
          {entitlements.data ? `Plan: ${entitlements.data.tier}` : null}
          <span className="app-sandbox">Sandbox</span>
        </p>
      </header>
      <main className="app">
        {notice ? (
          <p className="app-notice" role="status">
            {notice}
          </p>
        ) : null}
        {page === '/' ? <Workspace /> : <Billing />}
      </main>
    </>
  );
}

function Workspace() {
  return (
    <>
      <h1>Workspace</h1>
      <div className="app-grid">
        <section aria-labelledby="api-title" className="app-panel">
          <h2 id="api-title">API keys</h2>
          <Paywall feature="api_access">
            <p>Your API key: <code>ak_live_example_only</code></p>
          </Paywall>
        </section>
        <section aria-labelledby="audit-title" className="app-panel">
          <h2 id="audit-title">Audit log</h2>
          <Paywall feature="audit_log">
            <p>Everything your team changed, in order.</p>
          </Paywall>
        </section>
        <section aria-labelledby="sso-title" className="app-panel">
          <h2 id="sso-title">Single sign-on</h2>
          <Paywall feature="sso">
            <p>Single sign-on is on for your organisation.</p>
          </Paywall>
        </section>
        <section aria-labelledby="usage-title" className="app-panel">
          <h2 id="usage-title">Usage</h2>
          <UsageMeter metric="projects" />
          <UsageMeter metric="ai_tokens" />
          <UsageMeter metric="users" />
        </section>
      </div>
      <CreditBalance metric="ai_tokens" />
    </>
  );
}

function Billing() {
  return (
    <>
      <h1>Billing</h1>
      <PlanManager />
      <PricingTable />
    </>
  );
}
