// The GPU's slots: for each config section a model can implement, the parameters every implementation shares
// and the name of the default implementation. A new slot is one declaration in slots.cpp plus its interface.
#pragma once

namespace warpsim {

class Registry;
void declare_gpu_slots(Registry& registry);

}  // namespace warpsim
