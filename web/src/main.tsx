import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { RouterProvider } from 'react-router';
import { ApiError } from './api/client';
import { queryKeys } from './api/queries';
import { router } from './router';
import './styles.css';

/** A refusal (4xx) is an answer, not a glitch: asking again would get the same one. */
function shouldRetry(failures: number, error: Error): boolean {
  if (error instanceof ApiError && error.status >= 400 && error.status < 500) return false;
  return failures < 2;
}

const queryClient: QueryClient = new QueryClient({
  defaultOptions: { queries: { retry: shouldRetry, staleTime: 10_000 } },
  queryCache: new QueryCache({
    onError: (error, query) => {
      // The session ended (expired, or logged out in another tab): ask again who is signed in, which sends the page to the log-in.
      if (error instanceof ApiError && error.status === 401 && query.queryKey[1] !== 'me') void queryClient.invalidateQueries({ queryKey: queryKeys.me });
    },
  }),
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
