// copyprobe: does the OpenGL driver run buffer copies issued from a second,
// shared context (current on its own thread) concurrently with compute
// dispatches issued from the first? Within one context commands run in
// order, so overlap can only come from the driver scheduling two contexts'
// work at once (e.g. on a copy engine beside the SMs). See README.md.
#define _GNU_SOURCE
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GL/glcorearb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// GL entry points, all fetched through eglGetProcAddress so that only libEGL
// is linked (glvnd dispatches them to whatever context is current).
#define GLFUNCS(X)                                                                          \
  X(PFNGLGETERRORPROC, glGetError) X(PFNGLGETSTRINGPROC, glGetString)                       \
  X(PFNGLFINISHPROC, glFinish) X(PFNGLFLUSHPROC, glFlush)                                   \
  X(PFNGLCREATESHADERPROC, glCreateShader) X(PFNGLSHADERSOURCEPROC, glShaderSource)         \
  X(PFNGLCOMPILESHADERPROC, glCompileShader) X(PFNGLGETSHADERIVPROC, glGetShaderiv)         \
  X(PFNGLGETSHADERINFOLOGPROC, glGetShaderInfoLog)                                          \
  X(PFNGLCREATEPROGRAMPROC, glCreateProgram) X(PFNGLATTACHSHADERPROC, glAttachShader)       \
  X(PFNGLLINKPROGRAMPROC, glLinkProgram) X(PFNGLGETPROGRAMIVPROC, glGetProgramiv)           \
  X(PFNGLGETPROGRAMINFOLOGPROC, glGetProgramInfoLog) X(PFNGLUSEPROGRAMPROC, glUseProgram)   \
  X(PFNGLGETUNIFORMLOCATIONPROC, glGetUniformLocation) X(PFNGLUNIFORM1UIPROC, glUniform1ui) \
  X(PFNGLGENBUFFERSPROC, glGenBuffers) X(PFNGLBINDBUFFERPROC, glBindBuffer)                 \
  X(PFNGLBUFFERSTORAGEPROC, glBufferStorage) X(PFNGLMAPBUFFERRANGEPROC, glMapBufferRange)   \
  X(PFNGLBINDBUFFERBASEPROC, glBindBufferBase) X(PFNGLDISPATCHCOMPUTEPROC, glDispatchCompute) \
  X(PFNGLCOPYBUFFERSUBDATAPROC, glCopyBufferSubData)                                        \
  X(PFNGLCLEARBUFFERDATAPROC, glClearBufferData) X(PFNGLFENCESYNCPROC, glFenceSync)         \
  X(PFNGLCLIENTWAITSYNCPROC, glClientWaitSync) X(PFNGLWAITSYNCPROC, glWaitSync)             \
  X(PFNGLDELETESYNCPROC, glDeleteSync)
#define DECL(T, n) static T n;
GLFUNCS(DECL)

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "copyprobe: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}
static void glcheck(const char *where) {
  GLenum e = glGetError();
  if (e != GL_NO_ERROR) die("%s: GL error 0x%04x", where, e);
}
static void eglcheck(int ok, const char *what) {
  if (!ok) die("%s failed: EGL error 0x%04x", what, eglGetError());
}
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

// Each invocation runs one dependent FMA chain, so the dispatch time scales
// linearly with iters; the store keeps the chain from being optimised away.
static const char *spin_src =
    "#version 430\n"
    "layout(local_size_x = 256) in;\n"
    "layout(std430, binding = 0) buffer Out { float v[]; };\n"
    "uniform uint iters;\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  float a = float(i) * 1e-7, b = 0.9999 - float(i & 7u) * 1e-6;\n"
    "  for (uint k = 0u; k < iters; k++) a = fma(a, b, 1e-3);\n"
    "  v[i] = a;\n"
    "}\n";

// Work bits; one context runs its bits in this order, then glFinish.
enum { W_DISPATCH = 1, W_UP = 2, W_DOWN = 4, W_VERIFY = 8, W_EXIT = 16 };
// Same-buffer variants: the dispatch writes the head of DST (or DEV2) while
// a copy writes DST's tail (or reads DEV2's): disjoint bytes of one buffer
// object, as a pipelined product's bands are. Does the driver still
// overlap them, or does it order work by buffer object?
enum { W_DISP_DST = 32, W_UP_TAIL = 64, W_DISP_DEV2 = 128, W_DOWN_TAIL = 256 };
enum { B_SRC, B_DST, B_DEV2, B_RB, B_OUT, NBUF };  // up: SRC->DST, down: DEV2->RB
static GLuint buf[NBUF], prog;
static GLint loc_iters;
static GLsizeiptr S;
static GLuint groups = 1320, iters = 64;
static uint32_t *src_map;
static const uint32_t *rb_map;
static EGLDisplay dpy;

static uint32_t pattern(size_t i) { return (uint32_t)(i * 2654435761u) ^ 0x5a5a1234u; }

static void copy(GLuint from, GLuint to) {
  // Bindings are per context, so each context binds before every copy.
  glBindBuffer(GL_COPY_READ_BUFFER, from);
  glBindBuffer(GL_COPY_WRITE_BUFFER, to);
  glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, S);
}

// The up and down copies use disjoint buffers, so no ordering between them
// (or with the dispatch, which only writes B_OUT) is implied by the data.
static void do_work(int mask, const char *who) {
  if (mask & W_DISPATCH) {
    glUseProgram(prog);
    glUniform1ui(loc_iters, iters);
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, buf[B_OUT]);
    glDispatchCompute(groups, 1, 1);
  }
  if (mask & (W_DISP_DST | W_DISP_DEV2)) {
    glUseProgram(prog);
    glUniform1ui(loc_iters, iters);
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, buf[mask & W_DISP_DST ? B_DST : B_DEV2]);
    glDispatchCompute(groups, 1, 1);
  }
  if (mask & (W_UP_TAIL | W_DOWN_TAIL)) {  // the second half, away from the dispatch's head
    glBindBuffer(GL_COPY_READ_BUFFER, buf[mask & W_UP_TAIL ? B_SRC : B_DEV2]);
    glBindBuffer(GL_COPY_WRITE_BUFFER, buf[mask & W_UP_TAIL ? B_DST : B_RB]);
    glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, mask & W_UP_TAIL ? 0 : S / 2,
                        mask & W_UP_TAIL ? S / 2 : 0, S / 2);
  }
  if (mask & W_UP) copy(buf[B_SRC], buf[B_DST]);
  if (mask & W_DOWN) copy(buf[B_DEV2], buf[B_RB]);
  glFinish();
  glcheck(who);
}

// Worker threads B and C: each makes its context current once, then runs
// jobs handed over by the main thread (which owns context A).
struct worker {
  const char *name;
  EGLContext ctx;
  pthread_t th;
  int mask;
  double t0, t1;
};
static struct worker W[2] = {{"B"}, {"C"}};
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int gen, ndone, timed;  // timed: job goes through the start barrier
static pthread_barrier_t bar;  // A + B + C start each timed job together
static GLsync verify_fence;

static void *worker_main(void *arg) {
  struct worker *w = arg;
  eglcheck(eglMakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, w->ctx), "eglMakeCurrent(worker)");
  for (int seen = 0;;) {
    pthread_mutex_lock(&mu);
    while (gen == seen) pthread_cond_wait(&cv, &mu);
    seen = gen;
    int mask = w->mask, sync = timed;
    pthread_mutex_unlock(&mu);
    if (mask & W_EXIT) break;
    if (sync) {
      pthread_barrier_wait(&bar);
      w->t0 = now_ms();
      if (mask) do_work(mask, w->name);
      w->t1 = now_ms();
    } else if (mask & W_VERIFY) {
      // No glFinish: A must order itself after this copy through the fence.
      copy(buf[B_SRC], buf[B_DST]);
      verify_fence = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
      glFlush();  // a fence waited on by another context must be flushed
      glcheck("verify copy (B)");
    }
    pthread_mutex_lock(&mu);
    ndone++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
  }
  eglMakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
  return NULL;
}

static void hand_out(int b, int c, int sync) {
  pthread_mutex_lock(&mu);
  W[0].mask = b, W[1].mask = c, timed = sync, ndone = 0, gen++;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}
static void wait_workers(void) {
  pthread_mutex_lock(&mu);
  while (ndone < 2) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

// Runs masks a, b, c in contexts A, B, C at once; returns ms from the
// earliest start to the latest finish among the contexts that had work.
static double run_case(int a, int b, int c) {
  hand_out(b, c, 1);
  pthread_barrier_wait(&bar);
  double t0 = now_ms();
  if (a) do_work(a, "A");
  double t1 = now_ms();
  wait_workers();
  double s = a ? t0 : 1e300, e = a ? t1 : 0;
  for (int i = 0; i < 2; i++)
    if (W[i].mask) {
      if (W[i].t0 < s) s = W[i].t0;
      if (W[i].t1 > e) e = W[i].t1;
    }
  return e - s;
}

static size_t count_bad(const uint32_t *p) {
  size_t bad = 0, n = (size_t)S / 4;
  for (size_t i = 0; i < n; i++) bad += p[i] != pattern(i);
  return bad;
}
static void clear_buffer(GLuint b) {  // zero-fill on the GPU, in A
  glBindBuffer(GL_COPY_WRITE_BUFFER, b);
  glClearBufferData(GL_COPY_WRITE_BUFFER, GL_R32UI, GL_RED_INTEGER, GL_UNSIGNED_INT, NULL);
}

// B uploads SRC->DST and fences; A waits on that fence on the GPU, reads DST
// back into RB and checks every word, so a copy that did nothing is caught.
static void verify_cross_context(void) {
  clear_buffer(buf[B_DST]);
  clear_buffer(buf[B_RB]);
  glFinish();
  if (count_bad(rb_map) == 0) die("verify: RB still holds the pattern after clearing");
  hand_out(W_VERIFY, 0, 0);
  wait_workers();
  glWaitSync(verify_fence, 0, GL_TIMEOUT_IGNORED);
  copy(buf[B_DST], buf[B_RB]);
  GLsync f = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  GLenum r = glClientWaitSync(f, GL_SYNC_FLUSH_COMMANDS_BIT, 10000000000ull);
  if (r != GL_ALREADY_SIGNALED && r != GL_CONDITION_SATISFIED) die("verify: fence wait returned 0x%x", r);
  glDeleteSync(f);
  glDeleteSync(verify_fence);
  glcheck("verify (A)");
  size_t bad = count_bad(rb_map);
  if (bad) die("verify: %zu of %zu words wrong after upload in B + readback in A", bad, (size_t)S / 4);
}

static GLuint make_buffer(GLbitfield flags, void **map) {
  GLuint b;
  glGenBuffers(1, &b);
  glBindBuffer(GL_COPY_WRITE_BUFFER, b);
  glBufferStorage(GL_COPY_WRITE_BUFFER, S, NULL, flags);
  glcheck("glBufferStorage");
  if (map) {
    GLbitfield mf = flags & (GL_MAP_READ_BIT | GL_MAP_WRITE_BIT | GL_MAP_PERSISTENT_BIT | GL_MAP_COHERENT_BIT);
    if (!(*map = glMapBufferRange(GL_COPY_WRITE_BUFFER, 0, S, mf))) die("glMapBufferRange: GL error 0x%04x", glGetError());
  }
  return b;
}

static void build_program(void) {
  GLint ok;
  char log[4096];
  GLuint sh = glCreateShader(GL_COMPUTE_SHADER);
  glShaderSource(sh, 1, &spin_src, NULL);
  glCompileShader(sh);
  glGetShaderiv(sh, GL_COMPILE_STATUS, &ok);
  if (!ok) glGetShaderInfoLog(sh, sizeof log, NULL, log), die("compute shader compile failed:\n%s", log);
  prog = glCreateProgram();
  glAttachShader(prog, sh);
  glLinkProgram(prog);
  glGetProgramiv(prog, GL_LINK_STATUS, &ok);
  if (!ok) glGetProgramInfoLog(prog, sizeof log, NULL, log), die("program link failed:\n%s", log);
  if ((loc_iters = glGetUniformLocation(prog, "iters")) < 0) die("uniform 'iters' not found");
  glcheck("build_program");
}

static EGLDisplay open_display(int dev) {
  const char *cext = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
  PFNEGLQUERYDEVICESEXTPROC qd = (PFNEGLQUERYDEVICESEXTPROC)eglGetProcAddress("eglQueryDevicesEXT");
  PFNEGLGETPLATFORMDISPLAYEXTPROC gpd =
      (PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
  EGLDeviceEXT devs[16];
  EGLint n = 0;
  if (cext && strstr(cext, "EGL_EXT_platform_device") && qd && gpd && qd(16, devs, &n) && dev < n) {
    EGLDisplay d = gpd(EGL_PLATFORM_DEVICE_EXT, devs[dev], NULL);
    if (d != EGL_NO_DISPLAY) {
      printf("EGL: device %d of %d (EGL_EXT_platform_device)\n", dev, n);
      return d;
    }
  }
  // Without a device, Mesa's default platform wants an X server; surfaceless does not.
  if (cext && strstr(cext, "EGL_MESA_platform_surfaceless") && gpd) {
    printf("EGL: no device display (found %d devices); using EGL_MESA_platform_surfaceless\n", n);
    return gpd(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL);
  }
  printf("EGL: no device display (found %d devices); using EGL_DEFAULT_DISPLAY\n", n);
  return eglGetDisplay(EGL_DEFAULT_DISPLAY);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median_of(double *v, int n) {
  qsort(v, n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double time_dispatch(void) {  // median of 3 dispatches, ms
  double t[3];
  for (int i = 0; i < 3; i++) t[i] = run_case(W_DISPATCH, 0, 0);
  return median_of(t, 3);
}

// ref1/ref2: cases whose medians are the "alone" times for the ratio columns.
struct kase {
  const char *name;
  int a, b, c, ref1, ref2, bytes;  // bytes: copied bytes in units of S (GB/s of copy-only cases)
  double *t, med;
};
static struct kase K[] = {
    {"a  compute             A", W_DISPATCH, 0, 0, -1, -1, 0},
    {"b  upload              B", 0, W_UP, 0, -1, -1, 1},
    {"b  readback            B", 0, W_DOWN, 0, -1, -1, 1},
    {"b  up+down             B", 0, W_UP | W_DOWN, 0, 1, 2, 2},
    {"b  up || down        B|C", 0, W_UP, W_DOWN, 1, 2, 2},
    {"c  compute+upload      A", W_DISPATCH | W_UP, 0, 0, 0, 1, 1},
    {"c  compute+readback    A", W_DISPATCH | W_DOWN, 0, 0, 0, 2, 1},
    {"d  compute || upload A|B", W_DISPATCH, W_UP, 0, 0, 1, 1},
    {"d  compute || readbk A|B", W_DISPATCH, W_DOWN, 0, 0, 2, 1},
    {"e  compute || up+dn  A|B", W_DISPATCH, W_UP | W_DOWN, 0, 0, 3, 2},
    {"e  comp || up || dn A|B|C", W_DISPATCH, W_UP, W_DOWN, 0, 4, 2},
    {"f  upload half         B", 0, W_UP_TAIL, 0, -1, -1, 0},
    {"f  readback half       B", 0, W_DOWN_TAIL, 0, -1, -1, 0},
    {"f  comp || up half   A|B", W_DISPATCH, W_UP_TAIL, 0, 0, 11, 0},
    {"f  comp || dn half   A|B", W_DISPATCH, W_DOWN_TAIL, 0, 0, 12, 0},
    {"g  comp DST || up DST  A|B", W_DISP_DST, W_UP_TAIL, 0, 0, 11, 0},
    {"g  comp DEV2 || dn DEV2 A|B", W_DISP_DEV2, W_DOWN_TAIL, 0, 0, 12, 0},
};
// NK0: the cases before the same-buffer ones (f, g), which run after the
// data check because they overwrite parts of DST, DEV2 and RB.
enum { NK = sizeof K / sizeof K[0], NK0 = 11, D_UP = 7, D_DOWN = 8, F_UP = 13, F_DOWN = 14, G_UP = 15, G_DOWN = 16 };

static double overlap(int k) {  // 1 = fully hidden, 0 = serialised
  double x = K[K[k].ref1].med, y = K[K[k].ref2].med;
  return (x + y - K[k].med) / (x < y ? x : y);
}
static const char *judge(double ov) { return ov >= 0.6 ? "OVERLAPS" : ov <= 0.2 ? "SERIALISED" : "PARTIAL"; }

int main(int argc, char **argv) {
  double size_mib = 128, target_ms = 5;
  int reps = 9, dev = 0;
  setvbuf(stdout, NULL, _IOLBF, 0);  // keep stdout and error lines in order in a log
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i] + (argv[i][0] == '-' && argv[i][1] == '-');
    if (i + 1 >= argc) die("usage: copyprobe [-size MiB] [-ms dispatch_ms] [-reps N] [-groups G] [-dev N]");
    double v = strtod(argv[++i], NULL);
    if (!strcmp(f, "-size")) size_mib = v;
    else if (!strcmp(f, "-ms")) target_ms = v;
    else if (!strcmp(f, "-reps")) reps = (int)v;
    else if (!strcmp(f, "-groups")) groups = (GLuint)v;
    else if (!strcmp(f, "-dev")) dev = (int)v;
    else die("unknown flag %s", argv[i - 1]);
  }
  if (size_mib <= 0 || target_ms <= 0 || reps < 1 || groups < 1) die("bad flag value");
  S = (GLsizeiptr)(size_mib * 1048576) & ~(GLsizeiptr)15;

  dpy = open_display(dev);
  EGLint maj, min;
  eglcheck(dpy != EGL_NO_DISPLAY && eglInitialize(dpy, &maj, &min), "eglInitialize");
  const char *dext = eglQueryString(dpy, EGL_EXTENSIONS);
  printf("EGL: %d.%d vendor=%s\n", maj, min, eglQueryString(dpy, EGL_VENDOR));
  if (!strstr(dext, "EGL_KHR_surfaceless_context")) die("EGL_KHR_surfaceless_context not supported");
  eglcheck(eglBindAPI(EGL_OPENGL_API), "eglBindAPI(EGL_OPENGL_API)");
  EGLConfig cfg = EGL_NO_CONFIG_KHR;
  if (!strstr(dext, "EGL_KHR_no_config_context")) {
    EGLint ca[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_NONE}, nc = 0;
    eglcheck(eglChooseConfig(dpy, ca, &cfg, 1, &nc) && nc > 0, "eglChooseConfig");
  }
  EGLint xa[] = {EGL_CONTEXT_MAJOR_VERSION, 4, EGL_CONTEXT_MINOR_VERSION, 3,
                 EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL_NONE};
  EGLContext A = eglCreateContext(dpy, cfg, EGL_NO_CONTEXT, xa);
  eglcheck(A != EGL_NO_CONTEXT, "eglCreateContext(A)");
  for (int i = 0; i < 2; i++) {  // B and C share A's objects
    W[i].ctx = eglCreateContext(dpy, cfg, A, xa);
    eglcheck(W[i].ctx != EGL_NO_CONTEXT, "eglCreateContext(shared)");
  }
  eglcheck(eglMakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, A), "eglMakeCurrent(A)");
#define LOAD(T, n) \
  if (!(n = (T)eglGetProcAddress(#n))) die("eglGetProcAddress(%s) returned NULL", #n);
  GLFUNCS(LOAD)
  printf("GL: %s | %s | %s\n", glGetString(GL_VENDOR), glGetString(GL_RENDERER), glGetString(GL_VERSION));

  // Host-side buffers as glmul's -mapped path makes them; device-side with no flags.
  const GLbitfield persist = GL_MAP_PERSISTENT_BIT | GL_MAP_COHERENT_BIT | GL_CLIENT_STORAGE_BIT;
  buf[B_SRC] = make_buffer(GL_MAP_WRITE_BIT | persist, (void **)&src_map);
  buf[B_RB] = make_buffer(GL_MAP_READ_BIT | persist, (void **)&rb_map);
  buf[B_DST] = make_buffer(0, NULL);
  buf[B_DEV2] = make_buffer(0, NULL);
  glGenBuffers(1, &buf[B_OUT]);
  glBindBuffer(GL_SHADER_STORAGE_BUFFER, buf[B_OUT]);
  glBufferStorage(GL_SHADER_STORAGE_BUFFER, (GLsizeiptr)groups * 256 * 4, NULL, 0);
  for (size_t i = 0; i < (size_t)S / 4; i++) src_map[i] = pattern(i);  // coherent: no flush needed
  copy(buf[B_SRC], buf[B_DEV2]);                                         // readback source
  build_program();
  // Shared objects become usable in B and C once A's commands creating them
  // have completed; glFinish guarantees that before the workers start.
  glFinish();
  glcheck("setup");

  if (pthread_barrier_init(&bar, NULL, 3)) die("pthread_barrier_init");
  for (int i = 0; i < 2; i++)
    if (pthread_create(&W[i].th, NULL, worker_main, &W[i])) die("pthread_create");

  verify_cross_context();
  printf("verify: %.1f MiB uploaded in B, fenced, read back in A: all words match\n", S / 1048576.0);

  // Calibrate iters so one dispatch takes about target_ms.
  time_dispatch();  // first use: shader upload / JIT
  double t = time_dispatch();
  for (int k = 0; k < 12 && (t < target_ms * 0.95 || t > target_ms * 1.05); k++) {
    double f = target_ms / t, ni = iters * (f > 16 ? 16 : f);
    iters = ni < 1 ? 1 : ni > 1e9 ? 1e9 : (GLuint)ni;
    t = time_dispatch();
  }
  printf("compute: %u groups x 256, iters=%u, dispatch %.2f ms (target %.2f)\n", groups, iters, t, target_ms);

  // Rounds interleave the cases so drift (clocks, other load) hits all alike;
  // round 0 is a warm-up and not recorded.
  clear_buffer(buf[B_DST]);
  clear_buffer(buf[B_RB]);
  glFinish();
  for (int k = 0; k < NK; k++) K[k].t = calloc(reps, sizeof(double));
  for (int r = -1; r < reps; r++)
    for (int k = 0; k < NK0; k++) {
      double ms = run_case(K[k].a, K[k].b, K[k].c);
      if (r >= 0) K[k].t[r] = ms;
    }

  // The timed copies must have moved data too: RB was cleared, DEV2 holds the
  // pattern; DST was cleared and is checked through RB after that.
  size_t bad = count_bad(rb_map);
  copy(buf[B_DST], buf[B_RB]);
  glFinish();
  glcheck("post-check");
  bad += count_bad(rb_map);
  if (bad) die("post-check: %zu words wrong after the timed copies", bad);
  for (int r = -1; r < reps; r++)
    for (int k = NK0; k < NK; k++) {
      double ms = run_case(K[k].a, K[k].b, K[k].c);
      if (r >= 0) K[k].t[r] = ms;
    }

  printf("\n%-26s %9s %9s %9s %8s %8s %8s %8s\n", "case (contexts)", "median_ms", "min", "max", "GB/s",
         "/max", "/sum", "overlap");
  for (int k = 0; k < NK; k++) {
    struct kase *c = &K[k];
    c->med = median_of(c->t, reps);
    printf("%-26s %9.3f %9.3f %9.3f", c->name, c->med, c->t[0], c->t[reps - 1]);
    if (c->bytes && !((c->a | c->b | c->c) & W_DISPATCH)) printf(" %8.2f", c->bytes * (double)S / (c->med * 1e6));
    else printf(" %8s", "");
    if (c->ref1 >= 0) {
      double x = K[c->ref1].med, y = K[c->ref2].med;
      printf(" %8.3f %8.3f %8.3f", c->med / (x > y ? x : y), c->med / (x + y), overlap(k));
    }
    printf("\n");
  }
  printf("(/max, /sum: median over max and sum of the two 'alone' cases; overlap: (sum-median)/min, "
         "1 = fully concurrent, 0 = serialised)\n");
  double ca = K[0].med, cb = K[1].med;
  if (ca > 4 * cb || cb > 4 * ca) printf("note: compute (%.2f ms) and upload (%.2f ms) differ a lot; -ms near the copy time makes the test sharper\n", ca, cb);
  printf("verdict: copies from a second context vs compute in the first: upload %s (%.2f), readback %s (%.2f)\n",
         judge(overlap(D_UP)), overlap(D_UP), judge(overlap(D_DOWN)), overlap(D_DOWN));
  printf("verdict: half copies beside compute on other buffers: upload %s (%.2f), readback %s (%.2f); "
         "on disjoint bytes of the buffer the dispatch writes: upload %s (%.2f), readback %s (%.2f)\n",
         judge(overlap(F_UP)), overlap(F_UP), judge(overlap(F_DOWN)), overlap(F_DOWN), judge(overlap(G_UP)),
         overlap(G_UP), judge(overlap(G_DOWN)), overlap(G_DOWN));

  hand_out(W_EXIT, W_EXIT, 0);
  for (int i = 0; i < 2; i++) pthread_join(W[i].th, NULL);
  eglMakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
  eglTerminate(dpy);
  return 0;
}
