// Builds the Stepline web UI into dist/, which the local runtime serves at / (stepline.local.web).
// `npm run dev` serves it with hot reload and forwards /api and /config.json (the UI's runtime
// configuration) to a running `stepline dev`.
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

declare const process: { env: Record<string, string | undefined> };

export default defineConfig({
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true, chunkSizeWarningLimit: 1024 },
  server: {
    proxy: Object.fromEntries(['/api', '/config.json'].map(path => [path, process.env.STEPLINE_API ?? 'http://127.0.0.1:8000'])),
  },
});
