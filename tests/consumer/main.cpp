#include <pipesched/pipesched.hpp>

static_assert(sizeof(pipesched::event) == 8);

int main() { return 0; }
