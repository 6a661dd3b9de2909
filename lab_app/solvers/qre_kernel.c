/* The logit QRE path tracer and Newton solver of qre.py, compiled: same equations, same steps, same decisions.
 *
 * Built by kernel.py with the system C compiler (no prebuilt binary); linear systems go to the LAPACK that
 * scipy ships (dgetrf/dgetrs, handed over as function pointers), so a solve here is the solve numpy makes.
 * Matrices from Python are row-major; systems handed to LAPACK are built column-major.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*dgetrf_t)(int *m, int *n, double *a, int *lda, int *ipiv, int *info);
typedef void (*dgetrs_t)(char *trans, int *n, int *nrhs, double *a, int *lda, int *ipiv, double *b, int *ldb,
                         int *info);
static dgetrf_t lapack_getrf = NULL;
static dgetrs_t lapack_getrs = NULL;

void lab_set_lapack(void *getrf, void *getrs) {
  lapack_getrf = (dgetrf_t)getrf;
  lapack_getrs = (dgetrs_t)getrs;
}

typedef struct {
  int m, n, k, d;
  const double *A, *B;   /* m×n row-major */
  double *DA;            /* k×n: A[i+1] − A[0] */
  double *DBt;           /* (n−1)×m: B[:, j+1] − B[:, 0] */
  double *DAy, *DBx;     /* at the last evaluated (x, y) */
  double *x, *y;         /* probabilities at the last evaluated w */
  double *work;          /* m + n scratch */
} Sys;

static int sys_init(Sys *s, int m, int n, const double *A, const double *B) {
  s->m = m;
  s->n = n;
  s->k = m - 1;
  s->d = m + n - 2;
  s->A = A;
  s->B = B;
  size_t total = (size_t)(m - 1) * n + (size_t)(n - 1) * m + (m - 1) + (n - 1) + m + n + m + n;
  double *buf = calloc(total + 1, sizeof(double));
  if (!buf) return -1;
  s->DA = buf;
  s->DBt = s->DA + (size_t)(m - 1) * n;
  s->DAy = s->DBt + (size_t)(n - 1) * m;
  s->DBx = s->DAy + (m - 1);
  s->x = s->DBx + (n - 1);
  s->y = s->x + m;
  s->work = s->y + n;
  for (int i = 0; i < m - 1; i++)
    for (int j = 0; j < n; j++) s->DA[i * n + j] = A[(i + 1) * n + j] - A[j];
  for (int j = 0; j < n - 1; j++)
    for (int i = 0; i < m; i++) s->DBt[j * m + i] = B[i * n + j + 1] - B[i * n];
  return 0;
}

static void sys_free(Sys *s) { free(s->DA); }

static void softmax_logodds(const double *w, int len, double *p) {
  /* p = softmax(0, w[0..len−2]) */
  double mx = 0.0;
  for (int i = 0; i < len - 1; i++)
    if (w[i] > mx) mx = w[i];
  double sum = 0.0;
  p[0] = exp(-mx);
  sum += p[0];
  for (int i = 1; i < len; i++) {
    p[i] = exp(w[i - 1] - mx);
    sum += p[i];
  }
  for (int i = 0; i < len; i++) p[i] /= sum;
}

static void sys_probs(Sys *s, const double *w, double *x, double *y) {
  softmax_logodds(w, s->m, x);
  softmax_logodds(w + s->k, s->n, y);
}

/* F = H(w, λ); leaves x, y, D_A y and D_B x in s. */
static void sys_H(Sys *s, const double *w, double lam, double *F) {
  int k = s->k, m = s->m, n = s->n;
  sys_probs(s, w, s->x, s->y);
  for (int i = 0; i < k; i++) {
    double acc = 0.0;
    const double *row = s->DA + (size_t)i * n;
    for (int j = 0; j < n; j++) acc += row[j] * s->y[j];
    s->DAy[i] = acc;
    F[i] = w[i] - lam * acc;
  }
  for (int j = 0; j < n - 1; j++) {
    double acc = 0.0;
    const double *row = s->DBt + (size_t)j * m;
    for (int i = 0; i < m; i++) acc += row[i] * s->x[i];
    s->DBx[j] = acc;
    F[k + j] = w[k + j] - lam * acc;
  }
}

/* H_w (d×d) into the top-left of column-major M with leading dimension ld, at the last evaluated point. */
static void sys_Hw(Sys *s, double lam, double *M, int ld) {
  int k = s->k, n = s->n, m = s->m, d = s->d;
  for (int c = 0; c < d; c++) {
    memset(M + (size_t)c * ld, 0, sizeof(double) * d);
    M[(size_t)c * ld + c] = 1.0;
  }
  if (k && n > 1) {
    for (int j = 0; j < n - 1; j++) {
      double ly = lam * s->y[j + 1];
      double *col = M + (size_t)(k + j) * ld;
      for (int i = 0; i < k; i++) col[i] = (s->DAy[i] - s->DA[(size_t)i * n + j + 1]) * ly;
    }
    for (int i = 0; i < k; i++) {
      double lx = lam * s->x[i + 1];
      double *col = M + (size_t)i * ld;
      for (int j = 0; j < n - 1; j++) col[k + j] = (s->DBx[j] - s->DBt[(size_t)j * m + i + 1]) * lx;
    }
  }
}

static double softmax_diff(const double *p, const double *z, int len, double lam, double *work) {
  double mx = -INFINITY, sum = 0.0, worst = 0.0;
  for (int i = 0; i < len; i++) {
    work[i] = lam * z[i];
    if (work[i] > mx) mx = work[i];
  }
  for (int i = 0; i < len; i++) {
    work[i] = exp(work[i] - mx);
    sum += work[i];
  }
  for (int i = 0; i < len; i++) {
    double dd = fabs(p[i] - work[i] / sum);
    if (dd > worst) worst = dd;
  }
  return worst;
}

/* max |x − softmax(λAy)|, |y − softmax(λBᵀx)| */
static double sys_residual(Sys *s, const double *x, const double *y, double lam, double *scratch) {
  int m = s->m, n = s->n;
  double *Ay = scratch, *Btx = scratch + m, *work = scratch + m + n;
  for (int i = 0; i < m; i++) {
    double acc = 0.0;
    for (int j = 0; j < n; j++) acc += s->A[i * n + j] * y[j];
    Ay[i] = acc;
  }
  for (int j = 0; j < n; j++) Btx[j] = 0.0;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) Btx[j] += s->B[i * n + j] * x[i];
  double rx = softmax_diff(x, Ay, m, lam, work);
  double ry = softmax_diff(y, Btx, n, lam, work);
  return rx > ry ? rx : ry;
}

static double nash_conv(Sys *s, const double *x, const double *y, double *scratch) {
  int m = s->m, n = s->n;
  double *Ay = scratch, *Btx = scratch + m;
  double best = -INFINITY, cur = 0.0, bestc = -INFINITY, curc = 0.0;
  for (int i = 0; i < m; i++) {
    double acc = 0.0, accb = 0.0;
    for (int j = 0; j < n; j++) {
      acc += s->A[i * n + j] * y[j];
      accb += s->B[i * n + j] * y[j];
    }
    Ay[i] = acc;
    if (acc > best) best = acc;
    cur += x[i] * acc;
    curc += x[i] * accb;
  }
  for (int j = 0; j < n; j++) Btx[j] = 0.0;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) Btx[j] += s->B[i * n + j] * x[i];
  for (int j = 0; j < n; j++)
    if (Btx[j] > bestc) bestc = Btx[j];
  return fmax(best - cur, 0.0) + fmax(bestc - curc, 0.0);
}

static double abs_max(const double *v, int len) {
  double r = 0.0;
  for (int i = 0; i < len; i++)
    if (fabs(v[i]) > r) r = fabs(v[i]);
  return r;
}

static double dotp(const double *a, const double *b, int len) {
  double r = 0.0;
  for (int i = 0; i < len; i++) r += a[i] * b[i];
  return r;
}

/* Solve M u = b in place (b ← u); M (column-major, n×n) is overwritten by its LU. 0 on success. */
static int lu_solve_inplace(double *M, int n, int *ipiv, double *b) {
  int info = 0, one = 1, nn = n;
  char trans = 'N';
  lapack_getrf(&nn, &nn, M, &nn, ipiv, &info);
  if (info != 0) return -1;
  lapack_getrs(&trans, &nn, &one, M, &nn, ipiv, b, &nn, &info);
  return info;
}

static int lu_det_sign(const double *M, int n, const int *ipiv) {
  int sign = 1;
  for (int i = 0; i < n; i++) {
    double v = M[(size_t)i * n + i];
    if (v == 0.0) return 0;
    if (v < 0) sign = -sign;
    if (ipiv[i] != i + 1) sign = -sign;
  }
  return sign;
}

/* Damped Newton on H(·, λ) with a backtracking line search on ‖H‖₂ (qre._newton). w is updated in place.
 * out: x (m), y (n); info: [residual, iterations]. Returns 1 when converged. */
int lab_newton(int m, int n, const double *A, const double *B, double lam, double *w, double tol, int max_iter,
               double *x_out, double *y_out, double *info) {
  Sys s;
  if (sys_init(&s, m, n, A, B)) return -1;
  int d = s.d, ok = 0, it = 0;
  double *buf = malloc(sizeof(double) * ((size_t)d * d + 4 * (size_t)d + 2 * (size_t)(m + n)));
  int *ipiv = malloc(sizeof(int) * (d + 1));
  if (!buf || !ipiv) {
    free(buf);
    free(ipiv);
    sys_free(&s);
    return -1;
  }
  double *J = buf, *F = J + (size_t)d * d, *dw = F + d, *wt = dw + d, *Ft = wt + d, *scratch = Ft + d;
  sys_H(&s, w, lam, F);
  memcpy(x_out, s.x, sizeof(double) * m);
  memcpy(y_out, s.y, sizeof(double) * n);
  double nrm = sqrt(dotp(F, F, d)), res = 0.0;
  for (it = 0; it <= max_iter; it++) {
    if (abs_max(F, d) <= tol) {
      res = sys_residual(&s, x_out, y_out, lam, scratch);
      if (res <= tol) {
        ok = 1;
        break;
      }
    }
    if (it == max_iter) break;
    /* H_w at the accepted point: recompute D_A y, D_B x there (a rejected trial overwrote them) */
    sys_H(&s, w, lam, Ft);
    sys_Hw(&s, lam, J, d);
    for (int i = 0; i < d; i++) dw[i] = -F[i];
    if (lu_solve_inplace(J, d, ipiv, dw)) break;
    double step = 1.0, nt = 0.0;
    for (;;) {
      for (int i = 0; i < d; i++) wt[i] = w[i] + step * dw[i];
      sys_H(&s, wt, lam, Ft);
      nt = sqrt(dotp(Ft, Ft, d));
      if (nt <= (1 - 1e-4 * step) * nrm || step < 1e-6) break;
      step *= 0.5;
    }
    if (step < 1e-6) break;
    memcpy(w, wt, sizeof(double) * d);
    memcpy(F, Ft, sizeof(double) * d);
    memcpy(x_out, s.x, sizeof(double) * m);
    memcpy(y_out, s.y, sizeof(double) * n);
    nrm = nt;
  }
  if (!ok) res = sys_residual(&s, x_out, y_out, lam, scratch);
  info[0] = res;
  info[1] = it;
  free(buf);
  free(ipiv);
  sys_free(&s);
  return ok;
}

static double now_monotonic(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Fill the augmented matrix [[H_w, H_λ], [tᵀ, 0]] (column-major, (d+1)²) at the last evaluated point. */
static void augmented(Sys *s, double lam, const double *t, double *M) {
  int d = s->d, ld = d + 1;
  sys_Hw(s, lam, M, ld);
  double *last = M + (size_t)d * ld;
  for (int i = 0; i < s->k; i++) last[i] = -s->DAy[i];
  for (int j = 0; j < s->n - 1; j++) last[s->k + j] = -s->DBx[j];
  for (int c = 0; c <= d; c++) M[(size_t)c * ld + d] = t[c];
}

static void record_row(double *row, double lam, double nc, const double *x, const double *y, int m, int n) {
  row[0] = lam;
  row[1] = nc;
  memcpy(row + 2, x, sizeof(double) * m);
  memcpy(row + 2 + m, y, sizeof(double) * n);
}

/* Principal-branch path by pseudo-arclength predictor–corrector continuation (qre.trace_path, step for step).
 *
 * points: max_points rows of (λ, nashconv, x, y), or NULL; events: max_points rows of (kind 0 turning /
 * 1 bifurcation, λ, x, y), or NULL; stop_at < 0 means none; out: w_end (d).
 * counts: [points, events, corrector iterations, λ at the end]. Returns 0 reached λ_max, 1 max_points,
 * 2 step-size underflow, 3 stopped at stop_at (w_end interpolated there), 4 past the deadline, −1 no memory. */
int lab_trace(int m, int n, const double *A, const double *B, double lam_max, int max_points, double tol,
              double stop_at, double deadline, double *points, double *events, double *w_end, double *counts) {
  Sys s;
  if (sys_init(&s, m, n, A, B)) return -1;
  int d = s.d, D = d + 1, status = 0;
  double *buf = malloc(sizeof(double) * ((size_t)D * D + 8 * (size_t)D + 3 * (size_t)(m + n)));
  int *ipiv = malloc(sizeof(int) * D);
  if (!buf || !ipiv) {
    free(buf);
    free(ipiv);
    sys_free(&s);
    return -1;
  }
  double *M = buf, *z = M + (size_t)D * D, *t = z + D, *tn = t + D, *pred = tn + D, *zc = pred + D, *dz = zc + D;
  double *F = dz + D, *scratch = F + D;
  double *px = scratch + 2 * (m + n), *py = px + m;
  int n_points = 0, n_events = 0, corrector_total = 0, det_sign = 0, have_sign = 0;
  int row = 2 + m + n;
  for (int i = 0; i < D; i++) z[i] = 0.0;
  sys_H(&s, z, 0.0, F);
  if (points) record_row(points, 0.0, nash_conv(&s, s.x, s.y, scratch), s.x, s.y, m, n);
  n_points = 1;
  for (int i = 0; i < s.k; i++) t[i] = s.DAy[i];
  for (int j = 0; j < n - 1; j++) t[s.k + j] = s.DBx[j];
  t[d] = 1.0;
  double tnorm = sqrt(dotp(t, t, D));
  for (int i = 0; i < D; i++) t[i] /= tnorm;
  double h = 0.05 * fmax(1.0, fmin(lam_max, 10.0));
  double h_max = fmax(1.0, lam_max / 4);
  for (;;) {
    if (n_points >= max_points) {
      status = 1;
      break;
    }
    if (deadline > 0 && now_monotonic() > deadline) {
      status = 4;
      break;
    }
    if (h < 1e-12) {
      status = 2;
      break;
    }
    for (int i = 0; i < D; i++) pred[i] = z[i] + h * t[i];
    memcpy(zc, pred, sizeof(double) * D);
    int ok = 0, its = 0;
    for (its = 1; its < 9; its++) {
      sys_H(&s, zc, zc[d], F);
      augmented(&s, zc[d], t, M);
      double g = 0.0;
      for (int i = 0; i < D; i++) g += t[i] * (zc[i] - pred[i]);
      for (int i = 0; i < d; i++) dz[i] = -F[i];
      dz[d] = -g;
      if (lu_solve_inplace(M, D, ipiv, dz)) break;
      for (int i = 0; i < D; i++) zc[i] += dz[i];
      double step = abs_max(dz, D);
      if (step > 0.5 * h + 1e-9) break; /* the predictor was far from any point: shorten the step */
      if (step <= tol * (1.0 + abs_max(zc, D))) {
        sys_H(&s, zc, zc[d], F);
        ok = abs_max(F, d) <= 1e-8 * (1.0 + fabs(zc[d]));
        break;
      }
    }
    if (its == 9) its = 8;
    corrector_total += its;
    if (!ok) {
      h *= 0.5;
      continue;
    }
    /* new tangent, oriented like the old one; s holds x, y at zc */
    augmented(&s, zc[d], t, M);
    for (int i = 0; i < D; i++) tn[i] = 0.0;
    tn[d] = 1.0;
    if (lu_solve_inplace(M, D, ipiv, tn)) {
      h *= 0.5;
      continue;
    }
    tnorm = sqrt(dotp(tn, tn, D));
    for (int i = 0; i < D; i++) tn[i] /= tnorm;
    if ((dotp(t, tn, D) < 0.95 || zc[d] < 0) && h > 1e-9) {
      h *= 0.5;
      continue;
    }
    int sign = lu_det_sign(M, D, ipiv);
    if (have_sign && sign != 0 && sign != det_sign && h > 1e-6) {
      h *= 0.5; /* the orientation flipped: another branch, unless it persists at tiny steps (a bifurcation) */
      continue;
    }
    double lam_new = zc[d];
    int kind = -1;
    double a0 = 0.0, a1 = 0.0;
    if (tn[d] * t[d] < 0) {
      kind = 0;
      a0 = t[d];
      a1 = tn[d];
    } else if (have_sign && sign != 0 && sign != det_sign) {
      kind = 1;
      a0 = 1.0;
      a1 = -1.0;
    }
    if (kind >= 0 && events && n_events < max_points) {
      double frac = a0 != a1 ? a0 / (a0 - a1) : 0.5;
      double *e = events + (size_t)n_events * row;
      for (int i = 0; i < D; i++) dz[i] = z[i] + frac * (zc[i] - z[i]);
      sys_probs(&s, dz, px, py);
      e[0] = kind;
      e[1] = dz[d];
      memcpy(e + 2, px, sizeof(double) * m);
      memcpy(e + 2 + m, py, sizeof(double) * n);
      n_events++;
    }
    if (sign != 0) {
      det_sign = sign;
      have_sign = 1;
    }
    if (stop_at >= 0 && lam_new >= stop_at && z[d] < stop_at) {
      double frac = (stop_at - z[d]) / (lam_new - z[d]);
      for (int i = 0; i < d; i++) w_end[i] = z[i] + frac * (zc[i] - z[i]);
      counts[0] = n_points;
      counts[1] = n_events;
      counts[2] = corrector_total;
      counts[3] = stop_at;
      free(buf);
      free(ipiv);
      sys_free(&s);
      return 3;
    }
    memcpy(z, zc, sizeof(double) * D);
    memcpy(t, tn, sizeof(double) * D);
    if (points) record_row(points + (size_t)n_points * row, lam_new, nash_conv(&s, s.x, s.y, scratch), s.x, s.y, m, n);
    n_points++;
    if (lam_new >= lam_max) break;
    if (its <= 3)
      h = fmin(fmin(h * 2.0, h_max), 0.1 + 0.3 * fabs(lam_new));
    else if (its >= 6)
      h *= 0.6;
  }
  memcpy(w_end, z, sizeof(double) * d);
  counts[0] = n_points;
  counts[1] = n_events;
  counts[2] = corrector_total;
  counts[3] = z[d];
  free(buf);
  free(ipiv);
  sys_free(&s);
  return status;
}
