// The example's Vite configuration: React, the service's URL from VITE_BILLING_URL (npm run example sets it),
// and the client and the components from their sources in this repository (a web app installs them built;
// here an edit to a component shows at once, and nothing waits for their dist/).
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const source = (path) => fileURLToPath(new URL(`../../packages/${path}`, import.meta.url));

export default defineConfig({
  plugins: [react()],
  resolve: {
    alias: [
      { find: /^@billing-licensing\/client$/, replacement: source('client/src/index.ts') },
      { find: /^@billing-licensing\/react$/, replacement: source('react/src/index.ts') },
      { find: /^@billing-licensing\/react\/styles\.css$/, replacement: source('react/styles.css') },
    ],
  },
  server: { port: 5173, strictPort: true, host: 'localhost' },
  build: { target: 'es2022' },
});
