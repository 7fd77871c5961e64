// Pieces shared by the histogram twins (kernels::histogram): 256 threads, 256 bins, a grid-stride
// walk over n bytes by at most the resident blocks; counts added to bins, which start at zero.
#pragma once

#define BINS 256u
#define THREADS 256u
